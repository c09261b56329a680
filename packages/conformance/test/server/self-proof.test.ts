import { readFileSync } from 'node:fs';
import { type FaultName, faultNames, type MockClient, type MockOptions } from '@partner-lending/mock';
import { scopes } from '@partner-lending/spec';
import { describe, expect, it } from 'vitest';
import type { CheckResult } from '../../src/common/report.js';
import { exitCodeFor } from '../../src/common/report.js';
import { checkIds } from '../../src/server/checks/index.js';
import { type ConformanceOptions, runConformance as runWithOwnKey } from '../../src/server/run.js';
import { sharedSigningKey } from '../helpers.js';

/** Every embedded mock here signs with one pre-generated key pair (see sharedSigningKey). */
async function runConformance(options: ConformanceOptions) {
  return runWithOwnKey({ ...options, mock: { ...options.mock, signingKey: await sharedSigningKey() } });
}

/** A fault case: the mock faults (and, where needed, clients or a short TTL) that turn one check red. */
interface FaultCase {
  faults: FaultName[];
  mock?: Omit<MockOptions, 'faults'>;
  options?: ConformanceOptions;
  /** Other checks to run beside the one under test (the fault cases run only what they need). */
  with?: string[];
}

const limitedClients = (): MockClient[] => [
  {
    partnerId: 'partner-limited',
    clientId: 'limited-client',
    clientSecret: 'limited-secret-0123456789',
    authorizedScopes: ['read:loans', 'create:loan_draft'],
  },
  {
    partnerId: 'partner-other',
    clientId: 'other-client',
    clientSecret: 'other-secret-0123456789',
    authorizedScopes: [...scopes],
  },
];

const one = (...faults: FaultName[]): FaultCase[] => [{ faults }];

/**
 * A 1-s-token case on a clock shared by the mock and the suite, which a sleep moves forward at once: the
 * expiry check can then probe 300 s of leeway in no time.
 */
function expiryCase(settings: {
  faults?: FaultName[];
  leewaySeconds?: number;
  maxExpiryWaitSeconds: number;
}): FaultCase {
  let now = Date.now();
  const clock = { now: () => now };
  return {
    faults: settings.faults ?? [],
    mock: {
      tokenTtlSeconds: 1,
      clock: () => now,
      ...(settings.leewaySeconds !== undefined && { leewaySeconds: settings.leewaySeconds }),
    },
    options: {
      clock,
      sleep: async (ms: number) => {
        now += ms;
      },
      maxExpiryWaitSeconds: settings.maxExpiryWaitSeconds,
    },
  };
}

/**
 * check id → the fault cases that must turn it red. Every registered check has an entry (tested below):
 * a check that no fault can turn red is not done.
 */
const redFor: Record<string, FaultCase[]> = {
  'token-success-response': one('token-type-not-bearer'),
  'token-missing-credentials': one('token-accept-missing-credentials'),
  'token-wrong-secret': one('token-accept-wrong-secret'),
  'token-unsupported-grant-type': one('token-accept-any-grant-type'),
  'token-no-store': one('token-omit-no-store'),
  'token-expires-in': one('token-expires-in-mismatch'),
  'token-jti-unique': one('token-reuse-jti'),
  'token-partner-id': one('token-partner-id-mismatch'),
  'token-issuer': one('token-iss-mismatch'),
  // Over-grant of unauthorised scopes is only visible against what the console says (--expect-scopes,
  // which the embedded mock fills in from its first client): a client without every scope.
  'scope-authorised-set': [
    { faults: ['token-grant-unauthorized-scopes'], mock: { clients: limitedClients() } },
  ],
  'scope-intersection': one('token-ignore-requested-scope'),
  'scope-claim': one('token-scope-claim-mismatch'),
  'scope-order': one('token-scope-order-sensitive'),
  'audience-claim': one('token-wrong-audience-claim'),
  // The embedded mock's auth server also serves a second API: its token must be refused by this API.
  'audience-foreign': one('api-skip-audience-check'),
  'audience-foreign-endpoint': one('token-accept-foreign-audience'),
  'bearer-valid-token': one('api-reject-valid-tokens'),
  'bearer-missing-header': one('api-omit-challenge'),
  'bearer-scheme-case': one('api-bearer-case-sensitive'),
  'bearer-other-scheme': one('api-accept-any-scheme'),
  'bearer-query-token': one('api-accept-query-token'),
  // Only the create endpoints take a body: the check runs with --allow-writes.
  'bearer-body-token': [{ faults: ['api-accept-body-token'], options: { allowWrites: true } }],
  'bearer-malformed-header': one('api-crash-on-malformed-header'),
  'bearer-invalid-token-error': one('api-challenge-without-error'),
  'integrity-alg-none': one('api-accept-alg-none'),
  'integrity-hs256-public-key': one('api-accept-hs256-public-key'),
  'integrity-tampered-payload': one('api-skip-signature-check'),
  'integrity-unknown-key': one('api-skip-signature-check'),
  'integrity-embedded-jwk': one('api-trust-embedded-jwk'),
  'integrity-jku': one('api-trust-jku'),
  // No mock fault: proven red by a named faulty server (see provenByServer).
  // The only case with a short-lived token: the check waits the lifetime out, then keeps asking (a
  // leeway of up to 300 s may be allowed) — on a clock shared by the mock and the suite that a sleep
  // moves forward, so that "still accepted past 300 s" is reached in no time.
  'integrity-expired': [expiryCase({ faults: ['api-ignore-expiry'], maxExpiryWaitSeconds: 400 })],
  'scope-granted': one('api-reject-valid-tokens'),
  'scope-enforced': one('api-ignore-scope'),
  'scope-insufficient-403': one('api-insufficient-scope-401'),
  'partner-isolation': one('api-skip-partner-isolation'),
  'spec-documented-responses': one('api-undocumented-response'),
  // Judges the traffic of the others: needs the malformed-header requests that crash this mock.
  'spec-no-server-errors': [{ faults: ['api-crash-on-malformed-header'], with: ['bearer-malformed-header'] }],
};

/**
 * Checks proven red by a purpose-built faulty server instead of a mock fault: check id → the exact name
 * of the test that shows it (in test/interop.test.ts, which the guard below reads).
 */
const provenByServer: Record<string, string> = {
  'integrity-foreign-issuer':
    "integrity-foreign-issuer fails an express-jwt + jwks-rsa API that takes its keys from the token's own iss",
};

/** Faults no black-box check can observe, and why. */
const unobservable: Partial<Record<FaultName, string>> = {
  'api-ignore-nbf': 'a token with a future nbf needs the server key to sign it',
  'api-skip-issuer-check': 'a token with another iss needs the server key to sign it',
  'api-skip-typ-check': 'a token with another typ header needs the server key to sign it',
  'api-no-body-limit': 'the source states no body limit: accepting 2 MiB breaks no rule a check may enforce',
};

const byId = (checks: readonly CheckResult[], id: string) => checks.find((check) => check.id === id)!;

describe('self-proof: the catalogue against the mock', () => {
  it('has a fault case for every registered check, and every fault is used or explained', () => {
    expect(checkIds.filter((id) => !redFor[id]?.length && !provenByServer[id])).toEqual([]);
    expect(Object.keys(redFor).filter((id) => !checkIds.includes(id))).toEqual([]);
    const interop = readFileSync(new URL('./interop.test.ts', import.meta.url), 'utf8');
    for (const [id, name] of Object.entries(provenByServer)) {
      expect(checkIds).toContain(id);
      const quoted = [`'${name.replace(/'/g, "\\'")}'`, `"${name}"`, `\`${name}\``];
      expect(
        quoted.some((text) => interop.includes(`it(\n    ${text}`) || interop.includes(`it(${text}`)),
        `no test named ${JSON.stringify(name)} in test/interop.test.ts`,
      ).toBe(true);
    }
    const used = new Set(Object.values(redFor).flatMap((cases) => cases.flatMap((c) => c.faults)));
    expect(faultNames.filter((fault) => !used.has(fault) && !unobservable[fault])).toEqual([]);
  });

  const correct: Array<[string, ConformanceOptions]> = [
    ['deployed profile', { mock: { profile: 'deployed' } }],
    ['rfc9068 profile', { mock: { profile: 'rfc9068' } }],
    // A client with two scopes: with all four, no requested subset has an empty intersection.
    [
      'empty scope intersections as empty-scope tokens',
      { mock: { emptyIntersection: 'empty-token', clients: limitedClients() } },
    ],
    ['a client authorised for two scopes', { mock: { clients: limitedClients() } }],
    ['--allow-writes (the create endpoints called with a valid token)', { allowWrites: true }],
  ];
  it.concurrent.each(correct)('passes every check of a correct mock: %s', async (_name, options) => {
    const report = await runConformance(options);
    const bad = report.checks.filter((check) => check.status === 'failed' || check.status === 'errored');
    expect(bad.map((check) => `${check.id}: ${check.details}`)).toEqual([]);
    expect(exitCodeFor(report.checks)).toBe(0);
    // Every pass carries the exchanges it judged and states its precondition and cited sentence.
    for (const check of report.checks.filter((c) => c.status === 'passed')) {
      expect(check.evidence.length, check.id).toBeGreaterThan(0);
      expect(check.precondition.length, check.id).toBeGreaterThan(0);
      expect(check.citation, check.id).toMatch(
        /(RFC \d+|Partner Lending API — Authentication and Access|OpenAPI) ?§?/,
      );
    }
    // Only the expiry check may skip (12 h tokens, 20 s wait budget), and the body-token check without
    // --allow-writes (only the create endpoints take a body).
    expect(report.checks.filter((c) => c.status === 'skipped').map((c) => c.id)).toEqual(
      options.allowWrites ? ['integrity-expired'] : ['bearer-body-token', 'integrity-expired'],
    );
  });

  it('passes the expiry check when the token lives less than the wait budget', async () => {
    const report = await runConformance({ mock: { tokenTtlSeconds: 1 }, only: ['integrity-expired'] });
    expect(byId(report.checks, 'integrity-expired')).toMatchObject({ status: 'passed' });
  });

  it('accepts an API leeway on exp within the wait budget', async () => {
    const report = await runConformance({
      mock: { tokenTtlSeconds: 1, leewaySeconds: 2 },
      only: ['integrity-expired'],
      maxExpiryWaitSeconds: 6,
    });
    expect(byId(report.checks, 'integrity-expired')).toMatchObject({ status: 'passed' });
  });

  it('expiry with leeway: 60 s passes (or is not verified on a short budget), a day fails; each shows the leeway', async () => {
    const run = async (leewaySeconds: number, maxExpiryWaitSeconds: number) => {
      const setting = expiryCase({ leewaySeconds, maxExpiryWaitSeconds });
      const report = await runConformance({
        ...setting.options,
        mock: setting.mock!,
        only: ['integrity-expired'],
      });
      return byId(report.checks, 'integrity-expired');
    };
    const minute = await run(60, 400);
    expect(minute.status).toBe('passed');
    expect(minute.details).toMatch(
      /refused 6\d(\.\d)? s after exp: 401.*observed leeway: at least 5\d(\.\d)? s \(accepted then\)/,
    );
    const short = await run(60, 20);
    expect(short.status).toBe('skipped');
    expect(short.details).toMatch(
      /still accepted 1\d(\.\d)? s after exp when the --max-expiry-wait budget \(20 s\) ended.*Observed leeway: at least 1\d/,
    );
    const day = await run(86_400, 400);
    expect(day.status).toBe('failed');
    expect(day.details).toMatch(/^still accepted 3\d\d(\.\d)? s after exp, beyond the 300 s of leeway/);
  });

  it('a foreign-audience token that the API refuses is no hole: audience-foreign passes, only the endpoint check fails', async () => {
    const report = await runConformance({
      only: ['audience-foreign', 'audience-foreign-endpoint'],
      mock: { faults: ['token-accept-foreign-audience'] },
    });
    expect(byId(report.checks, 'audience-foreign')).toMatchObject({
      status: 'passed',
      details: expect.stringMatching(
        /^a token for https:\/\/second-api\.partner-lending\.invalid .* was refused by the API: 401/,
      ),
    });
    expect(byId(report.checks, 'audience-foreign-endpoint').status).toBe('failed');
  });

  it('a strict token endpoint never earns audience-foreign a pass for an API that checks no aud', async () => {
    // The endpoint issues no token for another audience: the API side cannot be verified.
    const strict = await runConformance({
      only: ['audience-foreign', 'audience-foreign-endpoint'],
      mock: { otherAudiences: [], faults: ['api-skip-audience-check'] },
    });
    expect(byId(strict.checks, 'audience-foreign')).toMatchObject({
      status: 'skipped',
      details: expect.stringMatching(/^not verified: not verified at the API: .*--other-audience AUD/),
    });
    expect(byId(strict.checks, 'audience-foreign-endpoint').status).toBe('passed');
    // With an audience the endpoint issues, the same API fails, with the exchange as evidence…
    const holed = await runConformance({
      only: ['audience-foreign'],
      otherAudience: 'https://reporting-api.example',
      mock: { otherAudiences: ['https://reporting-api.example'], faults: ['api-skip-audience-check'] },
    });
    const failedCheck = byId(holed.checks, 'audience-foreign');
    expect(failedCheck.status).toBe('failed');
    expect(failedCheck.evidence.some((item) => item.status === 200 && item.url.includes('/loans'))).toBe(
      true,
    );
    // …and a correct API passes.
    const correct = await runConformance({
      only: ['audience-foreign'],
      otherAudience: 'https://reporting-api.example',
      mock: { otherAudiences: ['https://reporting-api.example'] },
    });
    expect(byId(correct.checks, 'audience-foreign').status).toBe('passed');
  });

  it('401 for a missing scope fails only the should check: exit 0', async () => {
    const report = await runConformance({
      only: ['scope-enforced', 'scope-insufficient-403'],
      mock: { faults: ['api-insufficient-scope-401'] },
    });
    expect(report.checks.map((c) => [c.id, c.severity, c.status])).toEqual([
      ['scope-enforced', 'must', 'passed'],
      ['scope-insufficient-403', 'should', 'failed'],
    ]);
    expect(exitCodeFor(report.checks)).toBe(0);
  });

  const cases = Object.entries(redFor).flatMap(([id, list]) => list.map((fault) => [id, fault] as const));
  it.concurrent.each(cases)('%s turns red under %j', async (id, fault) => {
    const report = await runConformance({
      ...fault.options,
      only: [id, ...(fault.with ?? [])],
      mock: { ...fault.mock, faults: fault.faults },
    });
    const result = byId(report.checks, id);
    expect(result?.status, result?.details).toBe('failed');
    expect(result?.fix, `${id} says how to fix`).toBeTruthy();
    if (result?.severity === 'must') expect(exitCodeFor(report.checks)).toBe(1);
  });
});
