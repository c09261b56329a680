import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { contentSecurityPolicy } from '../../src/build/layout.js';
import { buildSite, firstSentence, SiteBuildError } from '../../src/build/site.js';

let dir: string;
let guidesDir: string;
let outDir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'site-'));
  guidesDir = join(dir, 'guides');
  outDir = join(dir, 'out');
  await mkdir(guidesDir);
  await writeFile(
    join(guidesDir, '01-start.md'),
    '# Start\n\nFirst steps.\n\n## Install\n\n```sh\nnpm i x\n```\n',
  );
  await writeFile(
    join(guidesDir, '02-more.md'),
    '# More\n\nSee [install](01-start.md#install) and [loans](reference.html#tag/Loans/operation/listLoans).\n',
  );
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('buildSite', () => {
  it('writes home, one page per guide, the reference and the local assets, in navigation order', async () => {
    const result = await buildSite({ outDir, guidesDir });
    expect(result.pages.map((p) => p.href)).toEqual([
      'index.html',
      'start.html',
      'more.html',
      'reference.html',
    ]);
    expect((await readdir(outDir)).sort()).toEqual([
      'assets',
      'index.html',
      'more.html',
      'openapi.json',
      'reference.html',
      'start.html',
    ]);
    expect((await readdir(join(outDir, 'assets'))).sort()).toEqual([
      'highlight.css',
      'openapi.reference.json',
      'redoc.standalone.js',
      'redoc.standalone.js.LICENSE.txt',
      'reference.js',
      'site.css',
    ]);
    const spec = await readFile(
      createRequire(import.meta.url).resolve('@partner-lending/spec/openapi.json'),
      'utf8',
    );
    await expect(readFile(join(outDir, 'openapi.json'), 'utf8')).resolves.toBe(spec); // the download: unchanged
    const more = await readFile(join(outDir, 'more.html'), 'utf8');
    expect(more).toContain('<a href="start.html#install">install</a>');
  });

  it('references no other origin from any page: every src and href of a resource is local', async () => {
    await buildSite({ outDir, guidesDir });
    for (const page of ['index.html', 'start.html', 'more.html', 'reference.html']) {
      const html = await readFile(join(outDir, page), 'utf8');
      const resources = [...html.matchAll(/<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)="([^"]*)"/g)].map(
        (m) => m[1],
      );
      expect(resources.length, page).toBeGreaterThan(0);
      for (const url of resources) expect(url, `${page}: ${url}`).not.toMatch(/^(?:[a-z]+:)?\/\//i);
      expect(html).toContain(`content="${contentSecurityPolicy.replaceAll("'", '&#39;')}"`);
    }
  });

  it('keeps the compiled builder (dist/build) and replaces every other file', async () => {
    await mkdir(join(outDir, 'build'), { recursive: true });
    await writeFile(join(outDir, 'build/index.js'), '// builder');
    await writeFile(join(outDir, 'old-guide.html'), 'stale');
    await buildSite({ outDir, guidesDir });
    const entries = await readdir(outDir);
    expect(entries).toContain('build');
    expect(entries).not.toContain('old-guide.html');
  });

  it('fails on links to a missing page, heading or operation, naming guide and line', async () => {
    await writeFile(
      join(guidesDir, '03-broken.md'),
      '# Broken\n\nSee [a](01-start.md#nope),\n[b](09-gone.md) and [c](reference.html#operation/deleteLoan).\n',
    );
    await expect(buildSite({ outDir, guidesDir })).rejects.toThrow(
      new SiteBuildError(
        'broken links:\n  03-broken.md:3: 01-start.md#nope (no heading or operation #nope)\n  03-broken.md:4: 09-gone.md (no such page)\n  03-broken.md:4: reference.html#operation/deleteLoan (no heading or operation #operation/deleteLoan)',
      ),
    );
  });

  it('fails with the command to run when the bundled spec is missing', async () => {
    await expect(buildSite({ outDir, guidesDir, specFile: join(dir, 'missing.json') })).rejects.toThrow(
      `cannot read the bundled spec at ${join(dir, 'missing.json')}; build it first with \`pnpm --filter @partner-lending/spec build\`.`,
    );
  });
});

describe('firstSentence', () => {
  it('cuts a summary at its first sentence end, ending it with a period', () => {
    expect(firstSentence('Install the SDK. Then call it.')).toBe('Install the SDK.');
    expect(firstSentence('Two addresses: auth and API')).toBe('Two addresses.');
    expect(firstSentence('Uses v3.2 paths')).toBe('Uses v3.2 paths');
  });
});
