import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { referenceAnchors, type Spec } from '../src/site/reference.js';
import { checkLinks, listFiles } from './helpers/check-links.js';

// Links and anchors over the built site (VitePress itself refuses a link to a missing page; this also
// checks #anchors, the reference's Redoc anchors, and that no page loads anything from elsewhere).

const spec = createRequire(import.meta.url)('@partner-lending/spec/openapi.json') as Spec;

describe('links and anchors of the built site', () => {
  const siteDir = inject('siteDir');

  it('has the pages of every guide, the reference and its text, the changelog', () => {
    const files = listFiles(siteDir);
    for (const page of [
      'index.html',
      'quick-start.html',
      'api-at-a-glance.html',
      'architecture.html',
      'reference.html',
      'reference/overview.html',
      'reference/loans.html',
      'changelog.html',
      'openapi.json',
      'redoc/redoc.standalone.js',
    ])
      expect(files, page).toContain(page);
  });

  it('every internal link reaches an existing page and anchor; nothing loads from another origin', () => {
    const report = checkLinks(siteDir, { 'reference.html': referenceAnchors(spec) });
    expect(report.checked).toBeGreaterThan(200);
    expect(report.broken).toEqual([]);
    expect(report.external).toEqual([]);
  });

  it('the checker reports a missing page, a missing anchor and an external resource', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'partner-docs-links-'));
    try {
      await writeFile(
        join(dir, 'index.html'),
        '<h2 id="here">x</h2><a href="#here">ok</a><a href="gone.html">a</a><a href="other.html#nowhere">b</a><a href="other.html#there">c</a><script src="https://cdn.example/x.js"></script><a href="https://example.org/">fine</a>',
      );
      await writeFile(join(dir, 'other.html'), '<h2 id="there">y</h2>');
      const report = checkLinks(dir);
      expect(report.checked).toBe(4);
      expect(report.broken).toEqual([
        'index.html → gone.html: no file gone.html',
        'index.html → other.html#nowhere: other.html has no id "nowhere"',
      ]);
      expect(report.external).toEqual(['index.html: <script src="https://cdn.example/x.js">']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
