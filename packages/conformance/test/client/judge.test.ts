import { describe, expect, it } from 'vitest';
import { judgeSession } from '../../src/index.js';
import { loans, sessionOf, tokenRequest } from './support/session.js';

const verdict = (session: Parameters<typeof judgeSession>[0], id: string) =>
  judgeSession(session, { only: [id] }).checks[0]!;

describe('client checks, judged as pure functions of a session', () => {
  it('accept a lowercase bearer scheme (RFC 9110 §11.1), refuse another scheme and an unknown token', () => {
    const ok = sessionOf(
      [
        tokenRequest(0, 'T1'),
        loans(10, 'T1', 200, { bearer: { scheme: 'bearer', wellFormed: true, token: 'T1' } }),
      ],
      [{ ref: 'T1', issuedAt: 5, expAt: 4000 }],
    );
    expect(verdict(ok, 'client-bearer-header').status).toBe('passed');
    const bad = sessionOf(
      [
        tokenRequest(0, 'T1'),
        loans(10, 'T1', 401, { bearer: { scheme: 'Token', wellFormed: false } }),
        loans(20, 'T1', 401, { bearer: { scheme: 'Bearer', wellFormed: true, unknownToken: true } }),
      ],
      [{ ref: 'T1', issuedAt: 5, expAt: 4000 }],
    );
    const result = verdict(bad, 'client-bearer-header');
    expect(result.status).toBe('failed');
    expect(result.details).toContain('the Token scheme, not Bearer');
    expect(result.details).toContain('a bearer token this stage never issued');
  });

  it('no-expired-token: a call in flight at exp passes, one 1.5 s past it fails; before any expiry it is not verified', () => {
    const tokens = [
      { ref: 'T1', issuedAt: 0, expAt: 2000 },
      { ref: 'T2', issuedAt: 2100, expAt: 6000 },
    ];
    const inFlight = sessionOf([tokenRequest(0, 'T1'), loans(2500, 'T1', 401), loans(2600, 'T2')], tokens);
    expect(verdict(inFlight, 'client-no-expired-token').status).toBe('passed');
    const late = sessionOf([tokenRequest(0, 'T1'), loans(3500, 'T1', 401)], tokens);
    expect(verdict(late, 'client-no-expired-token').status).toBe('failed');
    const early = sessionOf([tokenRequest(0, 'T1'), loans(100, 'T1')], tokens);
    expect(verdict(early, 'client-no-expired-token').details).toMatch(
      /^not verified: the journey's last API call \(0\.10 s\) came before/,
    );
  });

  it('retry-after: reads an HTTP date as well as seconds, and fails a follow-up sooner than the time given', () => {
    const throttled = (value: string) =>
      loans(1000, 'T1', 429, { responseHeaders: { 'retry-after': value }, injected: 'throttled', end: 1000 });
    const tokens = [{ ref: 'T1', issuedAt: 0, expAt: 10_000 }];
    // startedAt is 12:00:00.000 UTC: 12:00:04 is 3 s after the 429 left at 1.0 s.
    const date = 'Mon, 23 Nov 2026 12:00:04 GMT';
    const patient = sessionOf([tokenRequest(0, 'T1'), throttled(date), loans(4050, 'T1')], tokens);
    expect(verdict(patient, 'client-retry-after').status).toBe('passed');
    const hasty = sessionOf([tokenRequest(0, 'T1'), throttled(date), loans(2000, 'T1')], tokens);
    expect(verdict(hasty, 'client-retry-after').status).toBe('failed');
    const seconds = sessionOf([tokenRequest(0, 'T1'), throttled('2'), loans(1500, 'T1')], tokens);
    expect(verdict(seconds, 'client-retry-after').details).toContain('said Retry-After 2 s');
    // A call that arrived before the 429 was complete is in flight, not a follow-up.
    const inFlight = sessionOf(
      [tokenRequest(0, 'T1'), { ...throttled('2'), at: 950 }, loans(990, 'T1'), loans(3100, 'T1')],
      tokens,
    );
    expect(verdict(inFlight, 'client-retry-after').status).toBe('passed');
  });

  it('least-scope: a token request without scope gets every authorised scope, which fails when only loans are read', () => {
    const implicit = tokenRequest(0, 'T1');
    const { scope: _scope, ...form } = implicit.form;
    const session = sessionOf(
      [{ ...implicit, form }, loans(10, 'T1')],
      [{ ref: 'T1', issuedAt: 5, expAt: 4000, scope: ['read:loans', 'create:loan_draft'] }],
    );
    const result = verdict(session, 'client-least-scope');
    expect(result.status).toBe('failed');
    expect(result.details).toContain(
      'create:loan_draft (no scope parameter: every authorised scope was granted)',
    );
    // Asking for a scope that is not granted grants nothing more: not a least-privilege failure.
    const narrowed = sessionOf(
      [tokenRequest(0, 'T1', 'read:loans create:repayment'), loans(10, 'T1')],
      [{ ref: 'T1', issuedAt: 5, expAt: 4000 }],
    );
    expect(verdict(narrowed, 'client-least-scope').status).toBe('passed');
  });

  // Long-phase tokens (issued after the 12-s short phase of the test session) live 3600 s.
  const long = (ref: string, issuedAt: number, scope = ['read:loans']) => ({
    ref,
    issuedAt,
    expAt: issuedAt + 3_600_000,
    scope,
  });

  it('token-reuse: a renewal up to 300 s ahead passes, asking again with more left fails; another scope does not count', () => {
    // Renewed 300 s before expiry (a library default at the top of the range): no request is needless.
    const renewedAhead = sessionOf(
      [
        tokenRequest(13_000, 'T1'),
        loans(13_100, 'T1'),
        loans(14_000, 'T1'),
        tokenRequest(13_000 + 3_300_000, 'T2'),
        loans(13_000 + 3_300_200, 'T2'),
      ],
      [long('T1', 13_005), long('T2', 13_000 + 3_300_005)],
    );
    expect(verdict(renewedAhead, 'client-token-reuse').status).toBe('passed');
    const otherScope = sessionOf(
      [
        tokenRequest(13_000, 'T1'),
        loans(13_100, 'T1'),
        tokenRequest(13_500, 'T2', 'create:loan_draft'),
        loans(14_000, 'T1'),
      ],
      [long('T1', 13_005), long('T2', 13_505, ['create:loan_draft'])],
    );
    expect(verdict(otherScope, 'client-token-reuse').status).toBe('passed');
    // A token per call: T1 had answered a call and had 3599 s left.
    const perCall = sessionOf(
      [tokenRequest(13_000, 'T1'), loans(13_100, 'T1'), tokenRequest(14_000, 'T2'), loans(14_100, 'T2')],
      [long('T1', 13_005), long('T2', 14_005)],
    );
    const result = verdict(perCall, 'client-token-reuse');
    expect(result.status).toBe('failed');
    expect(result.details).toContain('T1 (issued 13.01 s, usable 3600.00 s) had 3599.01 s left');
    // The same in the short phase (a renewal window longer than a 4-s token): allowed, and not judged here.
    const shortOnly = sessionOf(
      [tokenRequest(0, 'T1'), loans(100, 'T1'), tokenRequest(1000, 'T2'), loans(1100, 'T2')],
      [
        { ref: 'T1', issuedAt: 5, expAt: 4005 },
        { ref: 'T2', issuedAt: 1005, expAt: 5005 },
      ],
    );
    expect(verdict(shortOnly, 'client-token-reuse').status).toBe('skipped');
    // Both phases: renewing while the short token is valid is said (and allowed), reuse judged on T3.
    const bothPhases = sessionOf(
      [
        tokenRequest(0, 'S1'),
        loans(100, 'S1'),
        tokenRequest(1000, 'S2'),
        loans(1100, 'S2'),
        tokenRequest(13_000, 'T3'),
        loans(13_100, 'T3'),
        loans(14_100, 'T3'),
      ],
      [
        { ref: 'S1', issuedAt: 5, expAt: 4005 },
        { ref: 'S2', issuedAt: 1005, expAt: 5005 },
        long('T3', 13_005),
      ],
    );
    const both = verdict(bothPhases, 'client-token-reuse');
    expect(both.status).toBe('passed');
    expect(both.details).toContain(
      "in the short phase it renewed 1 time while its 4-s token was still valid: it renews ahead by a window longer than those tokens' life",
    );
  });

  it('single-flight: callers queued behind a lock that each fetch their own token fail; sharing one passes', () => {
    // Two calls in flight at once, then a second token request right after T1 arrived, before any call used it.
    const herd = sessionOf(
      [
        tokenRequest(13_000, 'T1'),
        tokenRequest(13_010, 'T2'),
        loans(13_020, 'T1', 200, { end: 13_100 }),
        loans(13_030, 'T2', 200, { end: 13_110 }),
      ],
      [long('T1', 13_005), long('T2', 13_015)],
    );
    const result = verdict(herd, 'client-single-flight');
    expect(result.status).toBe('failed');
    expect(result.details).toContain('asked again before using the token just received');
    const shared = sessionOf(
      [
        tokenRequest(13_000, 'T1'),
        loans(13_020, 'T1', 200, { end: 13_100 }),
        loans(13_030, 'T1', 200, { end: 13_110 }),
      ],
      [long('T1', 13_005)],
    );
    expect(verdict(shared, 'client-single-flight').status).toBe('passed');
  });

  it('no-expired-token: keeping a token until the API refuses it fails, even when every late call is within the grace', () => {
    const tokens = [1, 2, 3].map((n) => ({ ref: `T${n}`, issuedAt: (n - 1) * 2000 + 5, expAt: n * 2000 }));
    // Each token is used until a call 200 ms past its exp is refused, then a new one is asked for.
    const reactive = sessionOf(
      tokens.flatMap((token, index) => [
        tokenRequest(index * 2000 + 400 * Math.sign(index), token.ref),
        loans(token.issuedAt + 500, token.ref),
        loans(token.expAt + 200, token.ref, 401, { end: token.expAt + 210 }),
      ]),
      tokens,
    );
    const result = verdict(reactive, 'client-no-expired-token');
    expect(result.status).toBe('failed');
    expect(result.details).toContain('renewed only once the API refused them (reactive renewal');
    // One late call by a race, the other renewals ahead: passes.
    const race = sessionOf(
      [
        tokenRequest(0, 'T1'),
        loans(500, 'T1'),
        loans(2005, 'T1', 401, { end: 2010 }),
        tokenRequest(2011, 'T2'),
        loans(2500, 'T2'),
        tokenRequest(3900, 'T3'),
        loans(4100, 'T3'),
      ],
      [
        { ref: 'T1', issuedAt: 5, expAt: 2000 },
        { ref: 'T2', issuedAt: 2015, expAt: 4000 },
        { ref: 'T3', issuedAt: 3905, expAt: 6000 },
      ],
    );
    expect(verdict(race, 'client-no-expired-token').status).toBe('passed');
  });

  it('retry-after: a call of another operation inside the time given fails; one in flight when the answer left does not', () => {
    const create = (at: number, status: number, extra = {}) => ({
      server: 'api' as const,
      at,
      method: 'POST',
      target: '/v3/partner/p1/loan_draft',
      status,
      bearer: { scheme: 'Bearer', wellFormed: true, token: 'T1' },
      ...extra,
    });
    const tokens = [{ ref: 'T1', issuedAt: 5, expAt: 40_000, scope: ['read:loans', 'create:loan_draft'] }];
    const otherOp = sessionOf(
      [
        tokenRequest(0, 'T1', 'read:loans create:loan_draft'),
        create(100, 503, { end: 120, responseHeaders: { 'retry-after': '2' } }),
        loans(115, 'T1', 200, { end: 200 }),
        loans(600, 'T1'),
        loans(2500, 'T1'),
      ],
      tokens,
    );
    const result = verdict(otherOp, 'client-retry-after');
    expect(result.status).toBe('failed');
    expect(result.details).toContain('1 API call came sooner (1 of another operation)');
    const waited = sessionOf(
      [
        tokenRequest(0, 'T1', 'read:loans create:loan_draft'),
        create(100, 503, { end: 120, responseHeaders: { 'retry-after': '2' } }),
        loans(115, 'T1', 200, { end: 200 }),
        loans(2200, 'T1'),
      ],
      tokens,
    );
    expect(verdict(waited, 'client-retry-after').status).toBe('passed');
  });

  it('a pass over a session with dropped exchanges is not verified: the dropped ones could hold a failure', () => {
    const session = {
      ...sessionOf([tokenRequest(0, 'T1'), loans(10, 'T1')], [{ ref: 'T1', issuedAt: 5, expAt: 4000 }]),
      dropped: 7,
    };
    const result = verdict(session, 'client-bearer-header');
    expect(result.status).toBe('skipped');
    expect(result.details).toMatch(
      /^not verified: 7 exchanges past the recording cap \(50000\) were not recorded/,
    );
  });

  it('judges the same session to the same verdicts every time (a reviewer can recompute them)', () => {
    const session = sessionOf(
      [tokenRequest(0, 'T1'), loans(10, 'T1'), loans(20, 'T1')],
      [{ ref: 'T1', issuedAt: 5, expAt: 4000 }],
    );
    const strip = (report: ReturnType<typeof judgeSession>) =>
      report.checks.map(({ durationMs: _d, ...rest }) => rest);
    expect(strip(judgeSession(structuredClone(session)))).toEqual(strip(judgeSession(session)));
  });
});
