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
    // A call that set out before the 429 left the stage is in flight, not a follow-up.
    const inFlight = sessionOf(
      [tokenRequest(0, 'T1'), throttled('2'), loans(1050, 'T1'), loans(3100, 'T1')],
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

  it('token-reuse: a request while a covering token has more than half its life left fails; one for another scope does not', () => {
    const tokens = [
      { ref: 'T1', issuedAt: 10, expAt: 4000 },
      { ref: 'T2', issuedAt: 510, expAt: 4000, scope: ['create:loan_draft'] },
      { ref: 'T3', issuedAt: 1010, expAt: 5000 },
    ];
    const otherScope = sessionOf(
      [
        tokenRequest(0, 'T1'),
        loans(20, 'T1'),
        tokenRequest(500, 'T2', 'create:loan_draft'),
        loans(600, 'T1'),
      ],
      tokens,
    );
    expect(verdict(otherScope, 'client-token-reuse').status).toBe('passed');
    const early = sessionOf(
      [tokenRequest(0, 'T1'), loans(20, 'T1'), tokenRequest(1000, 'T3'), loans(1100, 'T3')],
      tokens,
    );
    const result = verdict(early, 'client-token-reuse');
    expect(result.status).toBe('failed');
    expect(result.details).toContain('T1 (issued 0.01 s, expires 4.00 s) still covered it');
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
