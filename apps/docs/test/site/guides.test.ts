import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  GuideError,
  guideRewrites,
  loadGuides,
  parseGuide,
  sectionAt,
  sections,
} from '../../src/site/guides.js';
import { headingId, slugify } from '../../src/site/slug.js';

describe('guides', () => {
  it('reads number, slug, title and summary; code blocks do not count as headings', () => {
    const guide = parseGuide(
      '03-errors.md',
      '# Errors and `codes`\n\nFirst line\nsecond line.\n\n```sh\n# not a title\n```\n\n## One `two`\n',
    );
    expect(guide).toMatchObject({
      order: 3,
      slug: 'errors',
      title: 'Errors and codes',
      summary: 'First line second line.',
    });
    expect(sections(guide.markdown).map((s) => s.id)).toEqual(['errors-and-codes', 'one-two']);
    expect(sectionAt(guide.markdown, 11)?.id).toBe('one-two');
  });

  it('refuses a bad file name, two titles, no summary', () => {
    expect(() => parseGuide('errors.md', '# A\n\nb\n')).toThrow(GuideError);
    expect(() => parseGuide('01-a.md', '# A\n\nb\n\n# B\n')).toThrow(/exactly one "# Title".*found 2/);
    expect(() => parseGuide('01-a.md', '# A\n\n## B\n')).toThrow(/summary/);
  });

  it('orders by NN whatever the names, refuses two guides with one number, and rewrites to slug.md', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'guides-'));
    try {
      await writeFile(join(dir, '10-fleet.md'), '# Fleet\n\nRun many.\n');
      await writeFile(join(dir, '02-b.md'), '# B\n\nb.\n');
      await writeFile(join(dir, '09-a.md'), '# A\n\na.\n');
      const guides = loadGuides(dir);
      expect(guides.map((g) => g.file)).toEqual(['02-b.md', '09-a.md', '10-fleet.md']);
      expect(guideRewrites(guides)).toEqual({
        'guides/02-b.md': 'b.md',
        'guides/09-a.md': 'a.md',
        'guides/10-fleet.md': 'fleet.md',
      });
      await writeFile(join(dir, '02-c.md'), '# C\n\nc.\n');
      expect(() => loadGuides(dir)).toThrow(/same order/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("slugs like VitePress's, custom ids win", () => {
    expect(slugify('Where the loans are in a page')).toBe('where-the-loans-are-in-a-page');
    expect(slugify('401 → 403?')).toBe('_401-→-403');
    expect(headingId('Retry `Retry-After` {#retry}')).toBe('retry');
  });
});
