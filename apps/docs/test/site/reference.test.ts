import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import {
  operationsOf,
  referenceAnchors,
  referenceLinks,
  referencePages,
  referenceSpec,
  type Spec,
  safeMarkdown,
  vendorRedocBundle,
} from '../../src/site/reference.js';

const spec = createRequire(import.meta.url)('@partner-lending/spec/openapi.json') as Spec;

const page = (markdown: string) => ({
  file: 'guides/04-pagination.md',
  url: '/pagination.html',
  title: 'Pagination',
  markdown,
});

describe('reference', () => {
  it('vendors the Redoc bundle: the logo from the CDN and the source-map line go, each exactly once', () => {
    const bundle =
      'a "https://cdn.redoc.ly/redoc/logo-mini.svg" b\n//# sourceMappingURL=redoc.standalone.js.map';
    const vendored = vendorRedocBundle(bundle);
    expect(vendored).not.toContain('cdn.redoc.ly');
    expect(vendored).not.toContain('sourceMappingURL');
    expect(() => vendorRedocBundle('no logo here')).toThrow(/0 times, expected once/);
  });

  it('the installed Redoc bundle still matches the rewrites', () => {
    const require = createRequire(import.meta.url);
    const { readFileSync } = require('node:fs') as typeof import('node:fs');
    const source = readFileSync(require.resolve('redoc/bundles/redoc.standalone.js'), 'utf8');
    const vendored = vendorRedocBundle(source);
    expect(vendored).not.toMatch(/https:\/\/cdn\.redoc\.ly/);
    expect(vendored).not.toMatch(/fonts\.googleapis/);
  });

  it('collects a page link to an operation with its section, and refuses an anchor the reference lacks', () => {
    const links = referenceLinks(
      [
        page(
          '# Pagination\n\nIntro.\n\n## One page\n\nSee [listLoans](reference.html#tag/Loans/operation/listLoans).\n',
        ),
      ],
      spec,
    );
    expect(links).toEqual([
      expect.objectContaining({
        page: '/pagination.html',
        section: 'one-page',
        sectionTitle: 'One page',
        anchor: 'tag/Loans/operation/listLoans',
        line: 7,
      }),
    ]);
    expect(() =>
      referenceLinks([page('# P\n\nx [a](reference.html#tag/Loans/operation/nope)\n')], spec),
    ).toThrow(/guides\/04-pagination.md:3: link to reference#tag\/Loans\/operation\/nope/);
  });

  it('the display spec links each operation back to the sections that explain it, and shows real server URLs', () => {
    const links = referenceLinks(
      [page('# Pagination\n\n## One page\n\n[l](reference.html#tag/Loans/operation/listLoans)\n')],
      spec,
    );
    const display = referenceSpec(spec, links);
    const listLoans = operationsOf(display).find((e) => e.operation.operationId === 'listLoans')!;
    expect(listLoans.operation.description).toContain(
      '**Explained in:** [Pagination › One page](/pagination.html#one-page)',
    );
    const createRepayment = operationsOf(display).find((e) => e.operation.operationId === 'createRepayment')!;
    expect(createRepayment.operation.description).not.toContain('Explained in');
    expect(JSON.stringify(display.servers)).not.toContain('"{base_url}"');
    expect(
      operationsOf(spec).find((e) => e.operation.operationId === 'listLoans')!.operation.description,
    ).not.toContain('Explained in');
  });

  it('writes an overview and one text page per tag with every operation, its scope and its error codes', () => {
    const pages = referencePages(spec, []);
    expect(pages.map((p) => p.file)).toEqual([
      'reference/overview.md',
      ...(spec.tags ?? []).map((t) => `reference/${t.name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}.md`),
    ]);
    const auth = pages.find((p) => p.file === 'reference/authentication.md')!.markdown;
    expect(auth).toContain('{#requestToken}');
    expect(auth).toContain('`invalid_target`');
    expect(auth).toContain('no token');
    const loans = pages.find((p) => p.file === 'reference/loans.md')!.markdown;
    expect(loans).toContain('scope `read:loans`');
    expect(loans).toContain('insufficient_scope');
    expect(loans).toContain('| `limit` | query | integer | no |');
    expect(referenceAnchors(spec).has('tag/Loan-drafts/operation/createLoanDraft')).toBe(true);
  });

  it('escapes what Vue would read as a tag or an interpolation, but not inside code', () => {
    expect(safeMarkdown('send <CLIENT_ID> and {{x}} but `<ACCESS_TOKEN>`')).toBe(
      'send &lt;CLIENT_ID> and &#123;&#123;x}} but `<ACCESS_TOKEN>`',
    );
  });
});

describe('the site as written', () => {
  it('every operation of the spec is explained by at least one page that links to it', async () => {
    const { readSources } = await import('../../src/site/generate.js');
    const { explainedIn } = await import('../../src/site/reference.js');
    const sources = readSources();
    const entries = operationsOf(sources.spec);
    expect(entries.length).toBe(5);
    for (const entry of entries) {
      expect(explainedIn(entry, sources.links).length, entry.operation.operationId).toBeGreaterThan(0);
    }
  });
});
