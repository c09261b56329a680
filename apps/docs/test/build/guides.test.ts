import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GuideError, loadGuides, parseGuide, plainText } from '../../src/build/guides.js';

describe('parseGuide', () => {
  it('takes the order and slug from the file name, the title from the h1, the summary from the first paragraph', () => {
    const guide = parseGuide(
      '03-errors.md',
      '# Errors\n\nEvery **typed** error, and [what](x.md) to `do`.\n\n## More\n\nText.\n',
    );
    expect(guide).toMatchObject({
      order: 3,
      slug: 'errors',
      title: 'Errors',
      summary: 'Every typed error, and what to do.',
    });
  });

  it('refuses a file name without the order prefix', () => {
    expect(() => parseGuide('errors.md', '# E\n\nx\n')).toThrow(
      new GuideError(
        'errors.md: guide file names are NN-slug.md (two digits for the order, then lowercase words joined by "-"), e.g. 01-quick-start.md.',
      ),
    );
  });

  it('refuses a guide without exactly one title, or without a summary', () => {
    expect(() => parseGuide('01-a.md', 'text\n')).toThrow(
      '01-a.md: a guide has exactly one level-1 heading (its title), found 0',
    );
    expect(() => parseGuide('01-a.md', '# A\n\nx\n\n# B\n')).toThrow('found 2');
    expect(() => parseGuide('01-a.md', '# A\n\n## Only headings\n')).toThrow(
      '01-a.md: no paragraph after the title',
    );
  });
});

describe('loadGuides', () => {
  it('loads guides in order and refuses two guides with one order number', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'guides-'));
    try {
      await writeFile(join(dir, '02-b.md'), '# B\n\nb\n');
      await writeFile(join(dir, '01-a.md'), '# A\n\na\n');
      await writeFile(join(dir, 'notes.txt'), 'ignored');
      expect((await loadGuides(dir)).map((g) => g.slug)).toEqual(['a', 'b']);
      await writeFile(join(dir, '02-c.md'), '# C\n\nc\n');
      await expect(loadGuides(dir)).rejects.toThrow('02-c.md: order 2 is also used by 02-b.md.');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('plainText', () => {
  it('keeps only the text of inline Markdown', () => {
    expect(plainText('Use `getToken()` and [the *mock*](06-mock.md)\n  now.')).toBe(
      'Use getToken() and the mock now.',
    );
  });
});
