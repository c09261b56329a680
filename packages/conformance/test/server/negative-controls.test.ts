import { type RunningMock, startMock } from '@partner-lending/mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Report } from '../../src/common/report.js';
import { checkIds } from '../../src/server/checks/index.js';
import { type ConformanceOptions, runConformance } from '../../src/server/run.js';
import { json, sharedSigningKey, startServer, type TestServer } from '../helpers.js';

/**
 * Negative controls, the dual of the self-proof: targets against which a pass could only be vacuous.
 * Every check must be shown *not passed* against at least one of them (or be listed with the reason no
 * such target exists), and the guard below fails for a check without either.
 *
 * - refuse-all-api: a real token endpoint (the mock's) and an API that answers 401 invalid_token to
 *   everything: no refusal may count, since a valid token is refused too.
 * - wrong-base-path: the mock's own API under a base path where nothing lives (404 everywhere).
 * - no-second-partner: the mock as a remote target, no second partner named.
 * - token-endpoint-once: the mock behind a proxy whose token endpoint issues the preflight token, then
 *   answers 400 invalid_request to every other token request.
 */
type Control = 'refuse-all-api' | 'wrong-base-path' | 'no-second-partner' | 'token-endpoint-once';

const apiChecks: Control[] = ['refuse-all-api', 'wrong-base-path'];

/** check id → the controls under which it must not be `passed`. */
const notPassedUnder: Record<string, Control[]> = {
  'token-missing-credentials': ['token-endpoint-once'],
  'token-wrong-secret': ['token-endpoint-once'],
  'token-unsupported-grant-type': ['token-endpoint-once'],
  'token-jti-unique': ['token-endpoint-once'],
  'token-issuer': ['token-endpoint-once'],
  'scope-intersection': ['token-endpoint-once'],
  'scope-claim': ['token-endpoint-once'],
  'scope-order': ['token-endpoint-once'],
  'audience-foreign': ['token-endpoint-once'],
  'audience-foreign-endpoint': ['token-endpoint-once'],
  'bearer-valid-token': apiChecks,
  'bearer-missing-header': apiChecks,
  'bearer-scheme-case': apiChecks,
  'bearer-other-scheme': apiChecks,
  'bearer-query-token': apiChecks,
  'bearer-body-token': apiChecks,
  'bearer-malformed-header': apiChecks,
  'bearer-invalid-token-error': apiChecks,
  'integrity-alg-none': apiChecks,
  'integrity-hs256-public-key': apiChecks,
  'integrity-tampered-payload': apiChecks,
  'integrity-unknown-key': apiChecks,
  'integrity-embedded-jwk': apiChecks,
  'integrity-jku': apiChecks,
  'integrity-foreign-issuer': apiChecks,
  'integrity-expired': apiChecks,
  'scope-granted': apiChecks,
  'scope-enforced': apiChecks,
  'scope-insufficient-403': apiChecks,
  'partner-isolation': [...apiChecks, 'no-second-partner'],
  'spec-documented-responses': ['wrong-base-path'],
  'spec-no-server-errors': apiChecks,
};

/**
 * Checks that judge only the preflight's token answer: the run cannot start without that answer, so no
 * target makes them pass on nothing (their faults in the self-proof turn each red).
 */
const judgesThePreflight: Record<string, string> = {
  'token-success-response': 'judges the preflight token answer',
  'token-no-store': 'judges the preflight token answer',
  'token-expires-in': 'judges the preflight token answer',
  'token-partner-id': 'judges the preflight token answer',
  'scope-authorised-set': 'judges the preflight token answer against --expect-scopes',
  'audience-claim': 'judges the preflight token',
};

let mock: RunningMock;
let refusingApi: TestServer;
let onceProxy: TestServer;
let tokenRequests = 0;

beforeAll(async () => {
  // 2 s tokens, so that integrity-expired reaches its positive control (the token before exp).
  mock = await startMock({ signingKey: await sharedSigningKey(), tokenTtlSeconds: 2 });
  refusingApi = await startServer((_req, res) =>
    json(res, 401, { error: 'invalid_token' }, { 'www-authenticate': 'Bearer error="invalid_token"' }),
  );
  onceProxy = await startServer((req, res, body) => {
    const path = req.url ?? '/';
    if (path === '/oauth/token') tokenRequests += 1;
    if (path === '/oauth/token' && tokenRequests > 1)
      return json(res, 400, { error: 'invalid_request' }, { 'cache-control': 'no-store' });
    void fetch(new URL(path, mock.authUrl), {
      method: req.method ?? 'GET',
      headers: { 'content-type': String(req.headers['content-type'] ?? 'text/plain') },
      ...(req.method === 'POST' ? { body } : {}),
    }).then(async (answer) => {
      res.writeHead(answer.status, Object.fromEntries(answer.headers));
      res.end(await answer.text());
    });
  });
});
afterAll(() => Promise.all([mock.close(), refusingApi.close(), onceProxy.close()]));

function options(control: Control): ConformanceOptions {
  const client = mock.clients[0]!;
  const other = mock.clients.find((item) => item.partnerId !== client.partnerId)!;
  const common: ConformanceOptions = {
    authUrl: mock.authUrl,
    baseUrl: mock.baseUrl,
    audience: mock.audience,
    clientId: client.clientId,
    clientSecret: client.clientSecret,
    otherClientId: other.clientId,
    otherClientSecret: other.clientSecret,
    expectScopes: client.authorizedScopes,
    jwksUrl: mock.jwksUrl,
    allowWrites: true,
    maxExpiryWaitSeconds: 4,
  };
  switch (control) {
    case 'refuse-all-api':
      return { ...common, baseUrl: refusingApi.url };
    case 'wrong-base-path':
      return { ...common, baseUrl: `${mock.baseUrl.replace(/\/+$/, '')}/not-the-api` };
    case 'no-second-partner':
      return { ...common, otherClientId: undefined, otherClientSecret: undefined };
    case 'token-endpoint-once':
      tokenRequests = 0;
      return { ...common, authUrl: onceProxy.url };
  }
}

describe('negative controls: no pass where nothing was verified', () => {
  it('every check has a control that must not pass it, or judges only the preflight', () => {
    expect(checkIds.filter((id) => !notPassedUnder[id]?.length && !judgesThePreflight[id])).toEqual([]);
    expect(
      [...Object.keys(notPassedUnder), ...Object.keys(judgesThePreflight)].filter(
        (id) => !checkIds.includes(id),
      ),
    ).toEqual([]);
  });

  const controls: Control[] = [
    'refuse-all-api',
    'wrong-base-path',
    'no-second-partner',
    'token-endpoint-once',
  ];
  const reports = new Map<Control, Promise<Report>>();
  const reportFor = (control: Control) => {
    let report = reports.get(control);
    if (!report) {
      report = runConformance(options(control));
      reports.set(control, report);
    }
    return report;
  };

  it.each(controls)('%s: the checks it controls are not passed, with the reason', async (control) => {
    const report = await reportFor(control);
    const controlled = Object.entries(notPassedUnder)
      .filter(([, list]) => list.includes(control))
      .map(([id]) => id);
    const wronglyPassed = report.checks
      .filter((check) => controlled.includes(check.id) && check.status === 'passed')
      .map((check) => `${check.id}: ${check.details}`);
    expect(wronglyPassed).toEqual([]);
    // A check that is skipped says why: "not verified: …".
    for (const check of report.checks.filter((c) => controlled.includes(c.id) && c.status === 'skipped'))
      expect(check.details).toMatch(/^not verified: /);
  });

  it('refuse-all-api: the positive controls fail and the refusals are not verified', async () => {
    const report = await reportFor('refuse-all-api');
    const status = (id: string) => report.checks.find((check) => check.id === id)?.status;
    expect(status('bearer-valid-token')).toBe('failed');
    expect(status('scope-granted')).toBe('failed');
    for (const id of [
      'bearer-missing-header',
      'integrity-alg-none',
      'partner-isolation',
      'integrity-expired',
    ])
      expect(status(id)).toBe('skipped');
    expect(report.checks.find((check) => check.id === 'integrity-alg-none')?.details).toMatch(
      /^not verified: the positive control failed: GET loans with a valid token got 401, error invalid_token/,
    );
  });

  it('no-second-partner: partner-isolation is skipped and says how to name one', async () => {
    const report = await reportFor('no-second-partner');
    expect(report.checks.find((check) => check.id === 'partner-isolation')).toMatchObject({
      status: 'skipped',
      details: expect.stringMatching(/^not verified: no second partner is known: give --other-partner-id/),
    });
  });
});
