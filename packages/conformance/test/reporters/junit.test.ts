import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { formatJunitReport } from '../../src/reporters/junit.js';
import { report } from './fixture.js';

describe('formatJunitReport', () => {
  it('writes one testcase per check, grouped by category, with failures, errors and skips', () => {
    const xml = formatJunitReport(report);
    expect(XMLValidator.validate(xml)).toBe(true);
    const parsed = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '' }).parse(xml);
    const root = parsed.testsuites;
    expect(root).toMatchObject({ tests: '4', failures: '1', errors: '1', skipped: '1', time: '1.234' });
    const suites = [root.testsuite].flat();
    expect(suites.map((s: { name: string }) => s.name)).toEqual([
      'token-endpoint',
      'scope-intersection',
      'bearer-header',
      'token-integrity',
    ]);
    const cases: any[] = suites.map((s: { testcase: unknown }) => s.testcase);
    expect(cases.map((c: { name: string }) => c.name)).toEqual([
      'token-no-store',
      'scope-order',
      'bearer-body-token',
      'integrity-expired',
    ]);
    expect(cases[0].failure).toMatchObject({
      type: 'must',
      '#text': expect.stringContaining('expected no-store, got <none> & "x"'),
    });
    expect(cases[2].error).toMatchObject({ type: 'errored' });
    expect(cases[3].skipped).toMatchObject({ message: 'not verified: the token lives 43200 s more' });
    expect(xml).not.toContain('\u0001');
  });
});
