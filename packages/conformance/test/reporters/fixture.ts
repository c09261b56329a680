import type { Category } from '../../src/check.js';
import type { Report } from '../../src/report.js';
import type { TargetInfo } from '../../src/run-conformance.js';

export const report: Report = {
  schemaVersion: 1,
  tool: { name: '@partner-lending/conformance', version: '0.1.0' },
  target: { authUrl: 'http://127.0.0.1:1', baseUrl: 'http://127.0.0.1:2', audience: 'http://127.0.0.1:2' },
  startedAt: '2026-11-21T16:00:00.000Z',
  durationMs: 1234,
  summary: { passed: 1, failed: 1, skipped: 1, errored: 1 },
  checks: [
    {
      id: 'token-no-store',
      title: 'Token answers carry Cache-Control: no-store',
      category: 'token-endpoint',
      severity: 'must',
      status: 'failed',
      reference: 'RFC 6749 §5.1',
      details:
        'expected no-store, got <none> & "x"\nreproduce: curl -i -X POST \'http://127.0.0.1:1/oauth/token\'',
      durationMs: 12.5,
    },
    {
      id: 'scope-order',
      title: 'Order does not matter',
      category: 'scope-intersection',
      severity: 'must',
      status: 'passed',
      reference: 'RFC 6749 §3.3',
      details: '11 subsets',
      durationMs: 40,
    },
    {
      id: 'integrity-expired',
      title: 'An expired token is refused',
      category: 'token-integrity',
      severity: 'must',
      status: 'skipped',
      reference: 'RFC 9068 §4',
      details: 'the token lives 43200 s more',
      durationMs: 1,
    },
    {
      id: 'bearer-body-token',
      title: 'Body token',
      category: 'bearer-header',
      severity: 'should',
      status: 'errored',
      reference: 'RFC 6750 §2.2',
      details: 'no HTTP answer\u0001',
      durationMs: 3,
    },
  ],
};

export const target: TargetInfo = {
  authUrl: report.target.authUrl,
  baseUrl: report.target.baseUrl,
  audience: report.target.audience,
  kind: 'embedded mock (deployed)',
  profile: 'typ JWT, aud array, scope array, token_type bearer',
  checks: report.checks.map(({ id, category }) => ({ id, category: category as Category })),
};
