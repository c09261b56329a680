import { describe, expect, it } from 'vitest';
import { type ClientSession, judgeSession } from '../../src/index.js';
import { loans, sessionOf, tokenRequest } from './support/session.js';

// The three client checks that mainstream libraries at their defaults found unfair or blind: each
// judged on a hand-built session, the client that must pass beside the one that must fail.

const verdict = (session: ClientSession, id: string) => judgeSession(session, { only: [id] }).checks[0]!;

const allFour = 'read:loans create:loan_draft create:journal_update create:repayment';
const granted = ['read:loans', 'create:loan_draft'];
/** A long-phase token (issued after the 12-s short phase of the test session), living 3600 s. */
const long = (ref: string, issuedAt: number, scope = granted) => ({
  ref,
  issuedAt,
  expAt: issuedAt + 3_600_000,
  scope,
});
const withApiDelay = (session: ClientSession, apiDelayMs: number): ClientSession => ({
  ...session,
  stage: { ...session.stage, apiDelayMs },
});

describe('client-token-reuse judges the scopes asked, narrowed to those authorised', () => {
  it('a client asking for all four scopes, granted two, that asks before every call fails', () => {
    const perCall = sessionOf(
      [
        tokenRequest(13_000, 'T1', allFour),
        loans(13_200, 'T1'),
        tokenRequest(14_000, 'T2', allFour),
        loans(14_200, 'T2'),
        tokenRequest(15_000, 'T3', allFour),
        loans(15_200, 'T3'),
      ],
      [long('T1', 13_100), long('T2', 14_100), long('T3', 15_100)],
    );
    const result = verdict(perCall, 'client-token-reuse');
    expect(result.status).toBe('failed');
    expect(result.details).toMatch(/^2 token requests while the client held a working token/);
    expect(result.details).toContain(`(asked "${allFour}", authorised for "read:loans create:loan_draft")`);
  });

  it('the same client reusing its token passes (negative control: the narrowing alone fails nobody)', () => {
    const reused = sessionOf(
      [tokenRequest(13_000, 'T1', allFour), loans(13_200, 'T1'), loans(14_200, 'T1'), loans(15_200, 'T1')],
      [long('T1', 13_100)],
    );
    expect(verdict(reused, 'client-token-reuse').status).toBe('passed');
  });

  it('a request only for scopes outside the grant is not a needless renewal', () => {
    const probe = sessionOf(
      [
        tokenRequest(13_000, 'T1', 'read:loans'),
        loans(13_200, 'T1'),
        // Asking whether repayments are granted: refused, or narrowed to nothing — not a renewal.
        tokenRequest(14_000, undefined, 'create:repayment'),
        loans(14_200, 'T1'),
      ],
      [long('T1', 13_100, ['read:loans'])],
    );
    expect(verdict(probe, 'client-token-reuse').status).toBe('passed');
  });

  it('renewal windows from 0 to 300 s pass on long tokens; 331 s ahead (past the 30-s clock slack) fails', () => {
    for (const aheadSeconds of [0, 10, 60, 300, 330]) {
      const renewAt = 13_100 + 3_600_000 - aheadSeconds * 1000;
      const session = sessionOf(
        [
          tokenRequest(13_000, 'T1'),
          loans(13_200, 'T1'),
          tokenRequest(renewAt, 'T2'),
          loans(renewAt + 200, 'T2'),
        ],
        [long('T1', 13_100, ['read:loans']), long('T2', renewAt + 100, ['read:loans'])],
      );
      const result = verdict(session, 'client-token-reuse');
      expect(result.status, `${aheadSeconds} s ahead: ${result.details}`).toBe('passed');
    }
    const tooEarly = sessionOf(
      [
        tokenRequest(13_000, 'T1'),
        loans(13_200, 'T1'),
        tokenRequest(13_100 + 3_600_000 - 331_000, 'T2'),
        loans(13_100 + 3_600_000 - 330_800, 'T2'),
      ],
      [long('T1', 13_100, ['read:loans']), long('T2', 13_100 + 3_600_000 - 330_900, ['read:loans'])],
    );
    expect(verdict(tooEarly, 'client-token-reuse').status).toBe('failed');
  });
});

describe('client-retry-after: in flight only when it could have been sent before the answer arrived', () => {
  const tokens = [{ ref: 'T1', issuedAt: 5, expAt: 40_000, scope: granted }];
  const throttled = { injected: 'throttled' as const, responseHeaders: { 'retry-after': '2' } };

  it('calls made one after another right after the 429, all within 100 ms, are follow-ups: fails', () => {
    // The stage holds every API answer 20 ms: each call starts after the previous one was answered.
    const burst = withApiDelay(
      sessionOf(
        [
          tokenRequest(0, 'T1'),
          loans(1000, 'T1', 429, { ...throttled, end: 1020 }),
          loans(1022, 'T1', 200, { end: 1043 }),
          loans(1045, 'T1', 200, { end: 1066 }),
          loans(1068, 'T1', 200, { end: 1089 }),
          loans(3100, 'T1'),
        ],
        tokens,
      ),
      20,
    );
    const result = verdict(burst, 'client-retry-after');
    expect(result.status).toBe('failed');
    // The first arrived 2 ms after the answer was complete: on its heels, it may have been in flight.
    expect(result.details).toContain('2 API calls came sooner');
  });

  it('a call that arrived while the 429 was being answered is in flight: passes (negative control)', () => {
    const concurrent = withApiDelay(
      sessionOf(
        [
          tokenRequest(0, 'T1'),
          loans(1000, 'T1', 429, { ...throttled, end: 1020 }),
          loans(1010, 'T1', 200, { end: 1030 }),
          loans(3100, 'T1'),
        ],
        tokens,
      ),
      20,
    );
    expect(verdict(concurrent, 'client-retry-after').status).toBe('passed');
  });

  // A client making two calls at once (the curl journey: two background curls) on a busy machine: the
  // second set out before the 429 reached the client, and arrived 30–300 ms after it.
  const pair = (at: number, status = 200) => [
    loans(at, 'T1', 200, { end: at + 20 }),
    loans(at + 2, 'T1', status, { end: at + 22 }),
  ];
  it('a two-at-a-time client whose second call of the moment was held up 300 ms by a busy machine passes', () => {
    const busy = withApiDelay(
      sessionOf(
        [
          tokenRequest(0, 'T1'),
          ...pair(200),
          loans(1000, 'T1', 429, { ...throttled, end: 1020 }),
          loans(1320, 'T1', 200, { end: 1340 }),
          loans(3100, 'T1'),
        ],
        tokens,
      ),
      20,
    );
    const result = verdict(busy, 'client-retry-after');
    expect(result.status).toBe('passed');
    expect(result.details).toContain('1 call of the same moment arrived first');
    expect(result.details).toContain(
      'the next API call (GET /v3/partner/{partner_id}/loans) came after 2.08 s',
    );
  });

  it('the same client sending again once its held-up call was answered fails (tolerance is per call in flight, not a window)', () => {
    const again = withApiDelay(
      sessionOf(
        [
          tokenRequest(0, 'T1'),
          ...pair(200),
          loans(1000, 'T1', 429, { ...throttled, end: 1020 }),
          loans(1320, 'T1', 200, { end: 1340 }),
          loans(1345, 'T1', 200, { end: 1365 }),
          loans(3100, 'T1'),
        ],
        tokens,
      ),
      20,
    );
    const result = verdict(again, 'client-retry-after');
    expect(result.status).toBe('failed');
    expect(result.details).toContain('1 API call came sooner, the first after 0.33 s: #6');
  });

  it('a client that never made two calls at once gets no such tolerance: a call 300 ms after the 429 fails', () => {
    const sequential = withApiDelay(
      sessionOf(
        [
          tokenRequest(0, 'T1'),
          loans(200, 'T1', 200, { end: 220 }),
          loans(230, 'T1', 200, { end: 250 }),
          loans(1000, 'T1', 429, { ...throttled, end: 1020 }),
          loans(1320, 'T1', 200, { end: 1340 }),
          loans(3100, 'T1'),
        ],
        tokens,
      ),
      20,
    );
    expect(verdict(sequential, 'client-retry-after').status).toBe('failed');
  });

  it('no transit is allowed when the stage holds no API answer (a hand-built or zero-delay stage)', () => {
    const onHeels = sessionOf(
      [tokenRequest(0, 'T1'), loans(1000, 'T1', 429, { ...throttled, end: 1020 }), loans(1021, 'T1')],
      tokens,
    );
    expect(verdict(onHeels, 'client-retry-after').status).toBe('failed');
  });
});

describe('client-revocation-recovery: a loop is refusal after refusal, not routine renewals', () => {
  const revoked401 = (at: number, ref: string) =>
    loans(at, ref, 401, { injected: 'revoked', error: 'invalid_token', end: at + 20 });
  const short = (ref: string, issuedAt: number) => ({ ref, issuedAt, expAt: issuedAt + 4000 });

  it('three workers renewing before every call: three token requests between the 401 and the next success pass', () => {
    const session = sessionOf(
      [
        tokenRequest(0, 'T1'),
        loans(200, 'T1'),
        revoked401(300, 'T1'),
        // Each worker renews before its call (one at a time), and each token is sent.
        tokenRequest(330, 'T2'),
        tokenRequest(440, 'T3'),
        tokenRequest(550, 'T4'),
        loans(660, 'T2'),
        loans(670, 'T3'),
        loans(680, 'T4'),
      ],
      [short('T1', 100), short('T2', 430), short('T3', 540), short('T4', 650)],
    );
    const result = verdict(session, 'client-revocation-recovery');
    expect(result.status, result.details).toBe('passed');
    expect(result.details).toContain('3 token requests (0 never sent, 0 refused');
  });

  it('tokens fetched again and again and never sent fail', () => {
    const session = sessionOf(
      [
        tokenRequest(0, 'T1'),
        loans(200, 'T1'),
        revoked401(300, 'T1'),
        tokenRequest(330, 'T2'),
        tokenRequest(440, 'T3'),
        tokenRequest(550, 'T4'),
        tokenRequest(660, 'T5'),
        loans(770, 'T5'),
      ],
      [short('T1', 100), short('T2', 430), short('T3', 540), short('T4', 650), short('T5', 760)],
    );
    const result = verdict(session, 'client-revocation-recovery');
    expect(result.status).toBe('failed');
    expect(result.details).toContain('3 tokens fetched and never sent');
  });

  it('the revoked token sent again, or refused token requests one after another, fail', () => {
    const resent = sessionOf(
      [
        tokenRequest(0, 'T1'),
        loans(200, 'T1'),
        revoked401(300, 'T1'),
        loans(330, 'T1', 401),
        loans(360, 'T1', 401),
        tokenRequest(400, 'T2'),
        loans(510, 'T2'),
      ],
      [short('T1', 100), short('T2', 500)],
    );
    expect(verdict(resent, 'client-revocation-recovery').details).toContain('was sent again 2 times');
    const refused = sessionOf(
      [
        tokenRequest(0, 'T1'),
        loans(200, 'T1'),
        revoked401(300, 'T1'),
        tokenRequest(330, undefined),
        tokenRequest(360, undefined),
        tokenRequest(390, undefined),
        tokenRequest(420, 'T2'),
        loans(530, 'T2'),
      ],
      [short('T1', 100), short('T2', 520)],
    );
    const result = verdict(refused, 'client-revocation-recovery');
    expect(result.status).toBe('failed');
    expect(result.details).toContain('3 token requests refused');
  });
});
