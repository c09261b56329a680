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
    expect(report.coverage.scenarios.map((item) => [item.id, item.met])).toEqual([
      ['revocation', true],
      ['throttle', true],
      ['unavailable', true],
      ['narrowed-grant', true],
      ['renewal', true],
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

    expect(reasonsOf(noCalls)).toContain('must-not-verified: client-bearer-header');
    expect(reasonsOf(noCalls)).toContain('operation-not-succeeded: listLoans');
    expect(reportVerdict(noCalls.report).text).toMatch(/^FAIL — /);
    expect(reasonsOf(tokenPerCall)).toContain('decisive-check-failed: client-token-reuse');
    expect(reportVerdict(tokenPerCall.report).word).toBe('FAIL');

    const judged = (run: ClientConformanceRun) =>
      judgeSession(run.session, { certify: true, plan: certificationPlan }).certification?.reasons ?? [];
    expect(judged(noScenarios)).toEqual(
      expect.arrayContaining([
        'scenario-not-met: revocation',
        'scenario-not-met: throttle',
        'scenario-not-met: unavailable',
        'scenario-not-met: narrowed-grant',
        // No throttle played: Retry-After was never tested, and the plan makes that check decisive.
        'decisive-check-not-verified: client-retry-after',
      ]),
    );
    expect(judged(onlyLoans)).toEqual(
      expect.arrayContaining([
        'operation-not-succeeded: createLoanDraft',
        'operation-not-succeeded: createJournalUpdate',
        'operation-not-succeeded: createRepayment',
      ]),
    );
    expect(judged(onlyLoans)).not.toContain('operation-not-succeeded: listLoans');
    // Without --certify a practice run has no certification outcome, and no plan.
    expect(onlyLoans.report.certification).toBeUndefined();
    expect(onlyLoans.report.plan).toBeUndefined();
  }, 180_000);
});
