import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  type ClientConformanceRun,
  certificationPlan,
  clientCheckIds,
  reportVerdict,
  runClientConformance,
} from '../../src/index.js';

const referenceClient = fileURLToPath(new URL('../clients/reference-client.mjs', import.meta.url));

/** Runs the reference client under the stage with one bug (or none): 2-s tokens for 6 s, then long ones; a 9-s journey. */
function journey(
  bug: string,
  onSecret?: (secret: string) => void,
  extra: Record<string, string> = {},
): Promise<ClientConformanceRun> {
  return runClientConformance({
    onStage: (stage) => onSecret?.(stage.client.clientSecret),
    command: [process.execPath, referenceClient],
    env: { ...process.env, BUG: bug, JOURNEY_SECONDS: '9', ...extra },
    ttlSeconds: 2,
    stdio: 'pipe',
    timeoutSeconds: 60,
  });
}

const statusOf = (run: ClientConformanceRun, id: string) =>
  run.report.checks.find((check) => check.id === id)?.status;
const failedMust = (run: ClientConformanceRun) =>
  run.report.checks
    .filter((check) => check.severity === 'must' && check.status === 'failed')
    .map((check) => check.id);

// Each wrong client, and the check it must turn red (and no other must check).
const bugs: Array<[bug: string, check: string]> = [
  ['token-per-call', 'client-token-reuse'],
  ['cached-past-exp', 'client-no-expired-token'],
  ['token-in-query', 'client-token-not-in-url'],
  ['secret-to-api', 'client-secret-confined'],
  ['ignore-retry-after', 'client-retry-after'],
  ['replay-create', 'client-create-not-replayed'],
  ['retry-loop-401', 'client-revocation-recovery'],
  ['stampede', 'client-single-flight'],
  ['other-partner', 'client-own-partner'],
  ['wrong-scheme', 'client-bearer-header'],
  ['no-audience', 'client-audience'],
  ['broad-scope', 'client-least-scope'],
  ['ignore-grant', 'client-granted-scope-respected'],
  ['create-as-text', 'client-request-shape'],
  ['serialised-herd', 'client-single-flight'],
  ['reactive-renewal', 'client-no-expired-token'],
  ['retry-other-op', 'client-retry-after'],
  // Asks for all four scopes, is granted two, files the token under those two: a token per call.
  ['granted-scope-cache', 'client-token-reuse'],
  // Three calls one after another right after the 429, each well inside 100 ms on loopback.
  ['burst-after-429', 'client-retry-after'],
];

const exactlyOne = ['granted-scope-cache', 'burst-after-429'];

// Correct clients a mainstream library may be, each the fair side of a check's rule.
const correctVariants: Array<[name: string, env: Record<string, string>]> = [
  // Renews 300 s ahead (before every call on the short tokens) from three workers, one at a time:
  // fair for token reuse over the long tokens, and its renewals around the revocation are not a loop.
  ['renews 300 s ahead with three workers', { RENEW_AHEAD_SECONDS: '300', WORKERS: '3' }],
  // Asks for all four scopes and is granted two, caching by the scopes it asked: reuse is judged on the two.
  ['asks for all four scopes', { ASK_ALL: '1' }],
];

async function inBatches<T, R>(
  items: readonly T[],
  size: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = [];
  for (let index = 0; index < items.length; index += size)
    results.push(...(await Promise.all(items.slice(index, index + size).map(work))));
  return results;
}

describe('client mode against reference clients', () => {
  it('a correct fetch client passes every check, each with evidence', async () => {
    const run = await journey('');
    const { report } = run;
    expect(report.mode).toBe('client');
    expect(report.journey.exitCode).toBe(0);
    expect(report.checks.map((check) => check.id)).toEqual(clientCheckIds);
    for (const check of report.checks) {
      expect(check.status, `${check.id}: ${check.details}`).toBe('passed');
      expect(check.evidence.length, check.id).toBeGreaterThan(0);
    }
    // Every scenario step was reached by the journey, so no pass stands on an unplayed step.
    for (const scenario of report.scenarios) expect(scenario.firedAt, scenario.name).toBeTypeOf('number');
  }, 90_000);

  it.each(correctVariants)(
    'a correct client that %s passes every check',
    async (_name, env) => {
      const run = await journey('', undefined, env);
      expect(run.report.journey.exitCode).toBe(0);
      for (const check of run.report.checks)
        expect(check.status, `${check.id}: ${check.details}`).toBe('passed');
    },
    90_000,
  );

  it('every client check has a wrong client that turns it red (the self-proof of client mode)', () => {
    expect(new Set(bugs.map(([, check]) => check))).toEqual(new Set(clientCheckIds));
    // The three faults a mainstream library may hide behind: each has a wrong client of its own.
    expect(bugs.map(([bug]) => bug)).toEqual(
      expect.arrayContaining([
        'serialised-herd',
        'reactive-renewal',
        'retry-other-op',
        'granted-scope-cache',
        'burst-after-429',
      ]),
    );
  });

  it('each wrong client turns exactly its own check red, and no other must check', async () => {
    const runs = await inBatches(bugs, 3, async ([bug]) => journey(bug));
    runs.forEach((run, index) => {
      const [bug, check] = bugs[index]!;
      expect(statusOf(run, check), `${bug} → ${check}`).toBe('failed');
      const otherMust = failedMust(run).filter((id) => id !== check);
      expect(otherMust, `${bug} turned other must checks red`).toEqual([]);
      // The clients of the fairness fixes turn exactly their check red, should checks included.
      if (exactlyOne.includes(bug))
        expect(
          run.report.checks.filter((item) => item.status === 'failed').map((item) => item.id),
          bug,
        ).toEqual([check]);
      const failed = run.report.checks.find((item) => item.id === check)!;
      expect(failed.fix, `${check} says how to fix`).toBeTruthy();
      expect(failed.evidence.length).toBeGreaterThan(0);
    });
  }, 240_000);

  it('a journey that makes no call earns no pass at all (negative control)', async () => {
    const run = await journey('no-calls');
    expect(run.report.summary.passed).toBe(0);
    for (const check of run.report.checks) expect(check.details, check.id).toMatch(/^not verified: /);
  }, 60_000);

  it('keeps the client secret and whole tokens out of the session and the report', async () => {
    let secret = '';
    const run = await journey('token-in-query', (value) => {
      secret = value;
    });
    expect(secret.length).toBeGreaterThan(20);
    const text = JSON.stringify(run.session) + JSON.stringify(run.report);
    expect(text).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\./);
    expect(text).not.toContain(secret);
    // The token the client put in the query is there, shortened: the evidence shows where it went.
    expect(text).toMatch(/access_token=…[A-Za-z0-9_-]{6}/);
  }, 60_000);
});

/** A certification run of the reference client under the default plan (5-s tokens for 15 s): an 18-s journey. */
function certified(bug: string, extra: Record<string, string> = {}): Promise<ClientConformanceRun> {
  return runClientConformance({
    command: [process.execPath, referenceClient],
    env: { ...process.env, BUG: bug, JOURNEY_SECONDS: '18', ...extra },
    certify: true,
    plan: certificationPlan,
    stdio: 'pipe',
    timeoutSeconds: 120,
  });
}

// The decisive checks a scenario's handling rests on, each with a wrong client under the real plan.
const decisiveBugs: Array<[bug: string, check: string, scenario: string]> = [
  // Never drops the token the API refused 401 invalid_token: sends it again until it expires.
  ['keep-revoked', 'client-revocation-recovery', 'revocation'],
  // Never reads the token answer's scope: calls the creates with the narrowed read:loans token.
  ['ignore-scope', 'client-granted-scope-respected', 'narrowed-grant'],
];

describe('the decisive checks under the default plan', () => {
  it('each wrong client turns exactly its check red, its scenario not handled, the run FAIL and not certified, naming the check; correct clients certify', async () => {
    const runs = await Promise.all([
      ...decisiveBugs.map(([bug]) => certified(bug)),
      certified(''),
      certified('', { ASK_ALL: '1' }),
    ]);
    decisiveBugs.forEach(([bug, check, scenario], index) => {
      const { report } = runs[index]!;
      const failed = report.checks.filter((item) => item.status === 'failed').map((item) => item.id);
      expect(failed, `${bug}: ${JSON.stringify(report.checks.filter((c) => c.status === 'failed'))}`).toEqual(
        [check],
      );
      const covered = report.coverage.scenarios.find((item) => item.id === scenario)!;
      expect(covered, bug).toMatchObject({
        played: true,
        met: false,
        outcome: 'not-handled',
        check: { id: check, status: 'failed' },
      });
      expect(report.certification?.passed, bug).toBe(false);
      const reasons = report.certification!.reasons;
      expect(
        reasons.some((reason) => reason.startsWith(`decisive-check-failed: ${check} — `)),
        bug,
      ).toBe(true);
      expect(
        reasons.some((reason) => reason.startsWith(`scenario-not-handled: ${scenario} (${check}) — `)),
        bug,
      ).toBe(true);
      expect(reportVerdict(report).word, bug).toBe('FAIL');
    });
    // The revoked token was sent again and again, the narrowed token used for creates it lacks.
    expect(runs[0]!.report.checks.find((item) => item.id === 'client-revocation-recovery')!.details).toMatch(
      /the revoked token T\d+ was sent again \d+ times after its 401/,
    );
    expect(
      runs[1]!.report.checks.find((item) => item.id === 'client-granted-scope-respected')!.details,
    ).toMatch(/was called \d+ times with a token lacking its scope create:/);
    for (const [name, run] of [
      ['per-scope tokens', runs[2]!],
      ['all four scopes asked', runs[3]!],
    ] as const) {
      const { report } = run;
      expect(
        report.certification,
        `${name}: ${JSON.stringify(report.checks.filter((c) => c.status !== 'passed').map((c) => [c.id, c.details]))}`,
      ).toEqual({ passed: true, reasons: [] });
      for (const scenario of report.coverage.scenarios)
        expect(scenario, `${name}: ${scenario.id}`).toMatchObject({
          played: true,
          met: true,
          outcome: 'handled',
        });
    }
    // Asking for all four, it was narrowed to read:loans, and asked again before a create while that token was usable.
    expect(
      runs[3]!.report.checks.find((item) => item.id === 'client-granted-scope-respected')!.details,
    ).toMatch(
      /granted "read:loans" \(T\d+\).*was called with the new token T\d+.*while T\d+ was still usable/,
    );
  }, 180_000);
});
