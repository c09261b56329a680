import { describe, expect, it } from 'vitest';
import { formatJsonReport } from '../../src/reporters/json.js';
import { report } from './fixture.js';

describe('formatJsonReport', () => {
  it('writes the contract fields, round-tripping', () => {
    const parsed = JSON.parse(formatJsonReport(report));
    expect(Object.keys(parsed)).toEqual([
      'schemaVersion',
      'tool',
      'mode',
      'certify',
      'target',
      'spec',
      'writes',
      'startedAt',
      'durationMs',
      'summary',
      'notVerified',
      'checks',
    ]);
    expect(Object.keys(parsed.checks[0])).toEqual([
      'id',
      'title',
      'category',
      'severity',
      'status',
      'reference',
      'citation',
      'precondition',
      'details',
      'evidence',
      'evidenceOmitted',
      'durationMs',
    ]);
    expect(parsed).toEqual(report);
  });

  it('a client report keeps the integration, the provenance, the operations and a service run, in the documented order', async () => {
    const { judgeSession } = await import('../../src/index.js');
    const { loans, sessionOf, tokenRequest } = await import('../client/support/session.js');
    const session = sessionOf(
      [tokenRequest(0, 'T1'), loans(10, 'T1')],
      [{ ref: 'T1', issuedAt: 5, expAt: 4000 }],
    );
    session.integration = { name: 'Acme', version: 'v1' };
    const client = {
      ...judgeSession(session, { provenance: { source: 'service', sessionSha256: 'cd'.repeat(32) } }),
      run: { id: 'run_1', url: 'https://certify.example/api/runs/run_1' },
    };
    const parsed = JSON.parse(formatJsonReport(client));
    expect(Object.keys(parsed)).toEqual([
      'schemaVersion',
      'tool',
      'mode',
      'certify',
      'integration',
      'coverage',
      'stage',
      'journey',
      'scenarios',
      'recording',
      'provenance',
      'operations',
      'run',
      'spec',
      'startedAt',
      'durationMs',
      'environment',
      'summary',
      'notVerified',
      'checks',
    ]);
    expect(parsed.provenance.source).toBe('service');
    expect(parsed.integration).toEqual({ name: 'Acme', version: 'v1' });
    expect(parsed.run.id).toBe('run_1');
    // The coverage, near the top: the four operations of the spec, the must checks not verified.
    expect(parsed.coverage.operations.map((item: { operationId: string }) => item.operationId)).toEqual([
      'listLoans',
      'createLoanDraft',
      'createJournalUpdate',
      'createRepayment',
    ]);
    expect(parsed.coverage.operations[0]).toEqual({ operationId: 'listLoans', calls: 1, succeeded: 1 });
    expect(parsed.coverage.mustNotVerified).toEqual(parsed.notVerified);
    expect(parsed.operations.find((item: { calls: number }) => item.calls > 0)).toBeDefined();
    // Without a run (the CLI's own reports), no run key at all.
    const { run: _run, ...local } = client;
    expect(Object.keys(JSON.parse(formatJsonReport(local)))).not.toContain('run');
  });
});
