import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultPlan } from '../src/plan/plan.js';
import { type InProcessService, inProcessService } from './support/in-process.js';
import { api, type CreatedRun, journeyEnv, referenceClient, runCommand } from './support/service.js';

// Every fault the vendor's default plan plays is judged through the hosted service: for each check
// that decides a scenario, a broken client that fails it is FAIL and not approvable, with the check
// and the scenario named in `notApprovable`; the correct client beside them is PASS and approvable.
// (Correct clients on mainstream libraries are certified under the same plan by the conformance
// suite's interop tests; the shipped curl journey by e2e.test.ts.)

const broken = [
  ['keep-revoked', 'client-revocation-recovery', 'revocation'],
  ['ignore-scope', 'client-granted-scope-respected', 'narrowed-grant'],
] as const;

describe('the default plan, through the hosted service', () => {
  let svc: InProcessService;
  beforeAll(async () => {
    svc = await inProcessService();
  });
  afterAll(async () => {
    await svc?.close();
  });

  /** One journey of the reference client (BUG=… for a broken one) in a certification run of its own partner. */
  async function certify(bug: string) {
    const partner = await svc.partner(`Proof ${bug || 'correct'}`);
    const created = await api(svc.service.url, partner.apiKey, 'POST', '/api/runs', {
      certify: true,
      integration: { name: `reference ${bug || 'correct'}`, version: '1' },
    });
    expect(created.status).toBe(201);
    const run = created.json() as CreatedRun;
    const ran = await runCommand(process.execPath, [referenceClient], {
      env: { ...journeyEnv(run), JOURNEY_SECONDS: '22', ...(bug && { BUG: bug }) },
      timeoutMs: 90_000,
    });
    await api(svc.service.url, partner.apiKey, 'POST', `/api/runs/${run.id}/finish`, {
      journeyExitCode: ran.code,
    });
    return (await api(svc.service.url, partner.apiKey, 'GET', `/api/runs/${run.id}`)).json();
  }

  it('fails a client that re-sends a revoked token and one that ignores the granted scope, each named; certifies the correct client', async () => {
    const [correct, ...faulty] = await Promise.all([certify(''), ...broken.map(([bug]) => certify(bug))]);
    expect(correct.plan.id).toBe(defaultPlan.id);
    expect(correct.notApprovable).toEqual([]);
    expect(correct.verdict).toBe('PASS');
    expect(correct.approvable).toBe(true);
    // Not vacuous: the correct client was given the chance to fail each scenario, and handled it.
    for (const scenario of correct.coverage.scenarios)
      expect(scenario, scenario.id).toMatchObject({ played: true, met: true, outcome: 'handled' });
    faulty.forEach((run, index) => {
      const [bug, check, scenario] = broken[index]!;
      const context = `BUG=${bug}: ${JSON.stringify(run.notApprovable)}`;
      expect(run.verdict, context).toBe('FAIL');
      expect(run.approvable, context).toBe(false);
      expect(run.notApprovable, context).toContainEqual(
        expect.stringMatching(new RegExp(`^decisive-check-failed: ${check} — \\S`)),
      );
      expect(run.notApprovable, context).toContainEqual(
        expect.stringMatching(new RegExp(`^scenario-not-handled: ${scenario} \\(${check}\\)`)),
      );
      expect(
        run.coverage.scenarios.find((item: { id: string }) => item.id === scenario),
        context,
      ).toMatchObject({ played: true, met: false, outcome: 'not-handled' });
      // Exactly its check: every other scenario was handled.
      for (const other of run.coverage.scenarios)
        if (other.id !== scenario) expect(other.outcome, `${context} ${other.id}`).toBe('handled');
    });
  }, 180_000);

  it('names a failed must check with its detail, not only the verdict', async () => {
    const reactive = await certify('reactive-renewal');
    expect(reactive.approvable).toBe(false);
    expect(reactive.notApprovable).toContain('the verdict is FAIL, not PASS');
    expect(reactive.notApprovable).toContainEqual(
      expect.stringMatching(/^must-failed: client-no-expired-token — \S/),
    );
  }, 120_000);
});
