import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  type ClientConformanceOptions,
  type ClientConformanceRun,
  certificationPlan,
  formatSession,
  judgeSession,
  parseSession,
  type RunningStage,
  reportVerdict,
  runClientConformance,
} from '../../src/index.js';

const referenceClient = fileURLToPath(new URL('../clients/reference-client.mjs', import.meta.url));
const sdkJourney = fileURLToPath(new URL('../../examples/journey.mjs', import.meta.url));

function journey(
  bug: string,
  seconds: number,
  options: ClientConformanceOptions = {},
): Promise<ClientConformanceRun> {
  return runClientConformance({
    command: [process.execPath, referenceClient],
    env: { ...process.env, BUG: bug, JOURNEY_SECONDS: String(seconds) },
    stdio: 'pipe',
    timeoutSeconds: 120,
    ...options,
  });
}

/** A certification run under the default plan. */
const certify = (bug: string, options: ClientConformanceOptions = {}) =>
  journey(bug, 18, { certify: true, plan: certificationPlan, ...options });

/**
 * A third party who knows the run's addresses but holds none of its credentials: token requests with a
 * wrong secret (one in the query string), API calls without a token, and calls with a forged token.
 * With `secret` (the negative control) its token requests carry the run's real secret in the URL.
 */
async function thirdParty(stage: RunningStage, secret = 'not-the-secret'): Promise<void> {
  const path = `${stage.baseUrl}/v3/partner/${stage.client.partnerId}/loans`;
  const forged = `eyJhbGciOiJSUzI1NiJ9.${Buffer.from('{"sub":"x"}').toString('base64url')}.c2lnbmF0dXJl`;
  for (let attempt = 0; attempt < 3; attempt++) {
    await fetch(`${stage.tokenUrl}?client_secret=${secret}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: stage.client.clientId,
        client_secret: secret,
      }),
    }).then((response) => response.arrayBuffer());
    await fetch(path).then((response) => response.arrayBuffer());
    await fetch(path, { headers: { authorization: `Bearer ${forged}` } }).then((response) =>
      response.arrayBuffer(),
    );
  }
}

const reasonsOf = (run: ClientConformanceRun) => run.report.certification?.reasons ?? [];

describe('certification under the plan', () => {
  it('the reference client certifies on all four operations with the narrowed grant, in one run, while a third party without credentials hits it; runs that cover less do not certify, each with its reason', async () => {
    let outsider: Promise<void> | undefined;
    const [correct, noCalls, tokenPerCall, noScenarios, onlyLoans, control] = await Promise.all([
      certify('', {
        onStage: (stage) => {
          outsider = new Promise((resolve) => setTimeout(resolve, 1500)).then(() => thirdParty(stage));
        },
      }),
      certify('no-calls'),
      certify('token-per-call'),
      // Practice runs, judged afterwards against the plan: no scenario at all; only GET loans authorised.
      journey('', 4, { scenarios: [], ttlSeconds: 2 }),
      journey('', 4, { scopes: ['read:loans'], ttlSeconds: 2 }),
      // Negative control: the same outsider traffic, but carrying the run's real secret, is the journey's.
      journey('', 4, {
        ttlSeconds: 2,
        onStage: (stage) => {
          outsider = Promise.all([
            outsider,
            new Promise((resolve) => setTimeout(resolve, 500)).then(() =>
              thirdParty(stage, stage.client.clientSecret),
            ),
          ]).then(() => undefined);
        },
      }),
    ]);
    await outsider;

    // The correct client: every operation succeeded, every scenario met, certified, despite the outsider.
    const { report } = correct;
    expect(report.plan).toEqual({ id: certificationPlan.id, digest: certificationPlan.digest });
    expect(report.stage.authorizedScopes).toEqual(certificationPlan.scopes);
    expect(report.coverage.operations.map((item) => item.operationId)).toEqual([
      'listLoans',
      'createLoanDraft',
      'createJournalUpdate',
      'createRepayment',
    ]);
    for (const item of report.coverage.operations)
      expect(item.succeeded, `${item.operationId}: ${JSON.stringify(report.coverage)}`).toBeGreaterThan(0);
    // Every scenario played, and handled: the check the plan names for it passed.
    expect(
      report.coverage.scenarios.map((item) => [item.id, item.played, item.met, item.outcome, item.check]),
    ).toEqual([
      ['revocation', true, true, 'handled', { id: 'client-revocation-recovery', status: 'passed' }],
      ['throttle', true, true, 'handled', { id: 'client-retry-after', status: 'passed' }],
      ['unavailable', true, true, 'handled', { id: 'client-retry-after', status: 'passed' }],
      ['narrowed-grant', true, true, 'handled', { id: 'client-granted-scope-respected', status: 'passed' }],
      ['renewal', true, true, 'handled', { id: 'client-no-expired-token', status: 'passed' }],
    ]);
    expect(report.checks.find((check) => check.id === 'client-granted-scope-respected')?.status).toBe(
      'passed',
    );
    expect(report.coverage.mustNotVerified).toEqual([]);
    expect(report.outsideTraffic).toEqual({ exchanges: 9 });
    expect(
      correct.session.exchanges.filter((exchange) => exchange.outside).map((exchange) => exchange.server),
    ).toEqual(['auth', 'api', 'api', 'auth', 'api', 'api', 'auth', 'api', 'api']);
    expect(report.certification, JSON.stringify(report.checks.filter((c) => c.status !== 'passed'))).toEqual({
      passed: true,
      reasons: [],
    });
    expect(reportVerdict(report).word).toBe('PASS');
    // The saved session (its plan, its outside exchanges) reads back and judges again to the same outcome.
    const again = judgeSession(parseSession(formatSession(correct.session)), { certify: true });
    expect(again.certification).toEqual(report.certification);
    expect(again.outsideTraffic).toEqual({ exchanges: 9 });
    expect(again.plan).toEqual(report.plan);

    // The negative control: the same requests with the run's secret are judged (its secret in a URL fails).
    expect(control.report.outsideTraffic?.exchanges ?? 0).toBe(6);
    expect(control.report.checks.find((check) => check.id === 'client-token-not-in-url')?.status).toBe(
      'failed',
    );
    // …while the correct run, hit by the same traffic without the secret, passed that check.
    expect(report.checks.find((check) => check.id === 'client-token-not-in-url')?.status).toBe('passed');
    expect(reportVerdict(control.report).word).toBe('FAIL');

    // Each reason: a stable code and subject, then ` — ` and one line of what was found.
    const subjects = (run: ClientConformanceRun) => reasonsOf(run).map((reason) => reason.split(' — ')[0]);
    expect(subjects(noCalls)).toContain('must-not-verified: client-bearer-header');
    expect(reasonsOf(noCalls)).toContain('operation-not-succeeded: listLoans — never called');
    expect(reportVerdict(noCalls.report).text).toMatch(/^FAIL — /);
    expect(subjects(tokenPerCall)).toContain('decisive-check-failed: client-token-reuse');
    expect(
      reasonsOf(tokenPerCall).find((reason) =>
        reason.startsWith('decisive-check-failed: client-token-reuse — '),
      ),
    ).not.toContain('\n');
    expect(reportVerdict(tokenPerCall.report).word).toBe('FAIL');

    const judged = (run: ClientConformanceRun) =>
      judgeSession(run.session, { certify: true, plan: certificationPlan }).certification?.reasons ?? [];
    const judgedSubjects = (run: ClientConformanceRun) => judged(run).map((reason) => reason.split(' — ')[0]);
    expect(judgedSubjects(noScenarios)).toEqual(
      expect.arrayContaining([
        'scenario-not-played: revocation',
        'scenario-not-played: throttle',
        'scenario-not-played: unavailable',
        'scenario-not-played: narrowed-grant',
        // No throttle played: Retry-After was never tested, and the plan makes that check decisive.
        'decisive-check-not-verified: client-retry-after',
        'decisive-check-not-verified: client-revocation-recovery',
      ]),
    );
    expect(judged(noScenarios)).toContain(
      'scenario-not-played: revocation — no token was revoked: the journey made fewer API calls that would have succeeded than the revocation waits for',
    );
    expect(judgedSubjects(onlyLoans)).toEqual(
      expect.arrayContaining([
        'operation-not-succeeded: createLoanDraft',
        'operation-not-succeeded: createJournalUpdate',
        'operation-not-succeeded: createRepayment',
      ]),
    );
    expect(judgedSubjects(onlyLoans)).not.toContain('operation-not-succeeded: listLoans');
    // Without --certify a practice run has no certification outcome, and no plan.
    expect(onlyLoans.report.certification).toBeUndefined();
    expect(onlyLoans.report.plan).toBeUndefined();
  }, 180_000);

  it("the SDK's journey certifies under the default plan: its provider reads each token answer's scope and never calls an operation with a token lacking it", async () => {
    const run = await runClientConformance({
      command: [process.execPath, sdkJourney],
      env: { ...process.env, JOURNEY_SECONDS: '18' },
      certify: true,
      plan: certificationPlan,
      stdio: 'pipe',
      timeoutSeconds: 120,
    });
    const { report } = run;
    expect(report.journey.exitCode, report.journey.note).toBe(0);
    expect(
      report.certification,
      JSON.stringify(report.checks.filter((c) => c.status !== 'passed').map((c) => [c.id, c.details])),
    ).toEqual({ passed: true, reasons: [] });
    for (const scenario of report.coverage.scenarios)
      expect(scenario, scenario.id).toMatchObject({ played: true, met: true, outcome: 'handled' });
    // No call of an operation with a token lacking its scope, not even one.
    expect(report.checks.find((c) => c.id === 'client-granted-scope-respected')?.details).not.toContain(
      'tolerated',
    );
  }, 150_000);
});
