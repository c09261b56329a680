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

  it('a client report names its session digest and provenance in every suite, for a CI that reads only JUnit', async () => {
    const { judgeSession } = await import('../../src/index.js');
    const { loans, sessionOf, tokenRequest } = await import('../client/support/session.js');
    const session = sessionOf(
      [tokenRequest(0, 'T1'), loans(10, 'T1')],
      [{ ref: 'T1', issuedAt: 5, expAt: 4000 }],
    );
    session.integration = { name: 'Acme <Lending>', version: 'v1.2.3' };
    const client = judgeSession(session, {
      provenance: { source: 'rejudged', sessionSha256: 'ab'.repeat(32) },
    });
    const xml = formatJunitReport(client);
    expect(XMLValidator.validate(xml)).toBe(true);
    const suites = [
      new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '' }).parse(xml).testsuites.testsuite,
    ].flat();
    for (const suite of suites) {
      expect(suite.properties.property.slice(0, 4)).toEqual([
        { name: 'session-sha256', value: 'ab'.repeat(32) },
        { name: 'provenance', value: 'rejudged' },
        { name: 'attested', value: 'false' },
        { name: 'provenance-mark', value: 'self-recorded, not attested' },
        { name: 'integration', value: 'Acme <Lending>' },
        { name: 'integration-version', value: 'v1.2.3' },
      ]);
      // The coverage a certification decides on follows.
      expect(suite.properties.property).toEqual(
        expect.arrayContaining([
          { name: 'plan', value: 'none (practice run)' },
          { name: 'operation:listLoans', value: '1 calls, 1 succeeded' },
          { name: 'operation:createRepayment', value: '0 calls, 0 succeeded' },
        ]),
      );
    }
    // A server report has none (negative control).
    expect(formatJunitReport(report)).not.toContain('session-sha256');
  });
});
