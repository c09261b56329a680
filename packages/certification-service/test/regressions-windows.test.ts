// The production judge, check by check: each fault flagged and the correct behaviour next to it not;
// one finding per episode; late exchanges; state() resumed gives the one-pass findings; bounded memory.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Exchange } from '../src/evidence/exchange.js';
import {
  createPartnerJudge,
  defaultThresholds,
  type Finding,
  judgedInProduction,
  notJudgedInProduction,
} from '../src/regressions/windows.js';

const partnerId = 'partner-a';
const t0 = Date.UTC(2026, 0, 5, 9);
const hour = 3_600_000;
const lifetime = 43_199_000;
let issued = 0;

const issue = (at: number, fingerprint = `fp-${++issued}`, scopes = ['read:loans']): Exchange => ({
  at,
  partnerId,
  kind: 'token',
  method: 'POST',
  path: '/oauth/token',
  status: 200,
  fingerprint,
  scopesGranted: scopes,
  expiresAt: at + lifetime,
  reporterId: 'gate',
});

const call = (at: number, fingerprint: string | undefined, more: Partial<Exchange> = {}): Exchange => ({
  at,
  partnerId,
  kind: 'api',
  method: 'GET',
  path: `/v3/partner/${partnerId}/loans`,
  status: 200,
  ...(fingerprint === undefined ? {} : { fingerprint }),
  reporterId: 'gateway',
  ...more,
});

/** A later exchange of the partner, so that everything before it is past the skew and judged. */
const tick = (at: number) => call(at, 'fp-tick');

function judgeAll(exchanges: Exchange[], thresholds = {}): Finding[] {
  const judge = createPartnerJudge(partnerId, { thresholds });
  const end = Math.max(...exchanges.map((e) => e.at));
  return [...judge.observe(exchanges), ...judge.observe([tick(end + 60_000)])];
}

const checksOf = (findings: Finding[]) => findings.map((finding) => finding.check);

/** A client that keeps one token and calls every `everyMs` for `ms`. */
function cached(from: number, ms: number, everyMs: number, fingerprint = `fp-${++issued}`): Exchange[] {
  const out = [issue(from, fingerprint)];
  for (let at = from + 200; at < from + ms; at += everyMs) out.push(call(at, fingerprint));
  return out;
}

describe('client-token-reuse', () => {
  it('flags a token per call, not a cached token nor a fleet of 50 processes', () => {
    const perCall: Exchange[] = [];
    for (let at = t0; at < t0 + hour; at += 5_000)
      perCall.push(issue(at, `pc-${at}`), call(at + 100, `pc-${at}`));
    const findings = judgeAll(perCall);
    expect(checksOf(findings)).toContain('client-token-reuse');
    const finding = findings.find((f) => f.check === 'client-token-reuse')!;
    expect(finding.detail).toMatch(/^\d+ token issues for \d+ API calls since/);
    expect(finding.exchanges.length).toBeLessThanOrEqual(20);
    expect(finding.exchanges.at(-1)!.at).toBe(finding.at);

    expect(judgeAll(cached(t0, hour, 500))).toEqual([]);
    // 50 processes restarted in the same hour, each with its own cache, calling slowly.
    const fleet = Array.from({ length: 50 }, (_, n) => cached(t0 + n * 30_000, hour, 20_000)).flat();
    expect(judgeAll(fleet.sort((a, b) => a.at - b.at))).toEqual([]);
  });
});

/**
 * A correct client (one token, `rate` calls a second) for `beforeMs`, then a token per call at the same
 * rate: seconds from the switch to the client-token-reuse finding, or undefined within two hours.
 */
function secondsToFlag(rate: number, beforeMs: number, thresholds = {}): number | undefined {
  const judge = createPartnerJudge(partnerId, { thresholds });
  const gap = 1_000 / rate;
  const switched = t0 + beforeMs;
  const steady = issue(t0, `steady-${rate}-${beforeMs}`);
  let batch: Exchange[] = [steady];
  for (let at = t0 + gap; at < switched + 2 * hour; at += gap) {
    if (at < switched) batch.push(call(at, steady.fingerprint));
    else {
      const fingerprint = `per-call-${at}`;
      batch.push(issue(at, fingerprint), call(at + 1, fingerprint));
    }
    // Batches of about 5 s, as reporters send them.
    if (batch.length < rate * 5) continue;
    const found = judge.observe(batch).find((finding) => finding.check === 'client-token-reuse');
    batch = [];
    if (found) return (found.at - switched) / 1000;
  }
  return undefined;
}

describe('client-token-reuse after correct traffic', () => {
  // After an hour of correct calls, the hour's ratio alone needs as many token-per-call calls as the
  // correct ones still counted: about half an hour. The last minute's ratio bounds it by that minute.
  it.each([
    [10, 10 * 60_000],
    [10, 2 * hour],
    [50, 2 * 60_000],
    [50, hour],
  ])('a token per call at %i calls/s after %i ms of correct calls: flagged within 60 s', (rate, before) => {
    const seconds = secondsToFlag(rate, before);
    expect(seconds).toBeDefined();
    expect(seconds!).toBeLessThan(60 + defaultThresholds.skewMs / 1000);
    // The control: the hour alone (the last minute out of reach) is much later.
    const hourOnly = secondsToFlag(rate, before, { reuseShortMinIssues: Number.MAX_SAFE_INTEGER });
    expect(hourOnly).toBeDefined();
    expect(hourOnly!).toBeGreaterThan(before >= hour ? 1_200 : 100);
  });

  it('a token per call at 2 calls/s (under 600 issues a minute) is flagged by the hour', () => {
    expect(secondsToFlag(2, 2 * 60_000)).toBeLessThan(200);
    expect(secondsToFlag(2, hour)).toBeLessThan(1_900);
  });

  it('a fleet of 140 processes × 4 scope sets restarted within one minute, one call a token that minute, is not flagged', () => {
    const fleet: Exchange[] = [];
    // Correct traffic before: the same fleet, one shared token per scope set, 20 calls a second.
    const before = issue(t0, 'before');
    for (let at = t0 + 50; at < t0 + 30 * 60_000; at += 50) fleet.push(call(at, 'before'));
    const restart = t0 + 30 * 60_000;
    for (let p = 0; p < 140; p += 1)
      for (let s = 0; s < 4; s += 1) {
        const at = restart + Math.floor(((p * 4 + s) / 560) * 60_000);
        const fingerprint = `fleet-${p}-${s}`;
        fleet.push(issue(at, fingerprint, [`scope-${s}`]), call(at + 20, fingerprint));
        // Then each process calls with its tokens again, as a cache does.
        for (let n = 1; n <= 10; n += 1) fleet.push(call(restart + 60_000 + n * 30_000 + p * 7, fingerprint));
      }
    const sorted = [before, ...fleet].sort((a, b) => a.at - b.at);
    expect(judgeAll(sorted)).toEqual([]);
    // The same restart with a 150th process crosses 600 issues in the minute: the edge stated.
    const edge = [...sorted];
    for (let p = 140; p < 150; p += 1)
      for (let s = 0; s < 4; s += 1) {
        const fingerprint = `fleet-${p}-${s}`;
        edge.push(issue(restart + 59_000, fingerprint, [`scope-${s}`]), call(restart + 59_020, fingerprint));
      }
    expect(checksOf(judgeAll(edge.sort((a, b) => a.at - b.at)))).toContain('client-token-reuse');
  });

  it('a state written before the short window resumes (the short window starts empty)', () => {
    const judge = createPartnerJudge(partnerId);
    judge.observe([issue(t0, 'old'), call(t0 + 10, 'old')]);
    const state = judge.state() as { windows: Record<string, unknown> };
    delete state.windows.shortIssues;
    delete state.windows.shortCalls;
    const resumed = createPartnerJudge(partnerId, { state: JSON.parse(JSON.stringify(state)) });
    expect(resumed.observe([tick(t0 + 60_000)])).toEqual([]);
  });
});

describe('client-single-flight', () => {
  it('flags a stampede (25 tokens at once, each used once, one kept), not a fleet starting together', () => {
    const stampede: Exchange[] = [];
    for (let n = 0; n < 25; n += 1)
      stampede.push(issue(t0 + n * 10, `st-${n}`), call(t0 + 300 + n, `st-${n}`));
    for (let at = t0 + 1_000; at < t0 + 15 * 60_000; at += 2_000) stampede.push(call(at, 'st-24'));
    expect(checksOf(judgeAll(stampede))).toEqual(['client-single-flight']);

    const fleet: Exchange[] = [];
    for (let n = 0; n < 25; n += 1) fleet.push(issue(t0 + n * 10, `fl-${n}`));
    for (let at = t0 + 1_000; at < t0 + 15 * 60_000; at += 2_000)
      fleet.push(call(at, `fl-${Math.floor((at - t0) / 2_000) % 25}`));
    expect(judgeAll(fleet)).toEqual([]);
  });
});

describe('client-retry-after', () => {
  const throttled = (at: number, fingerprint: string) =>
    call(at, fingerprint, { status: 429, retryAfterSeconds: 30 });

  it('flags calls through the wait, not calls in flight, after it, or with another token', () => {
    const ignoring = [issue(t0, 'ra'), throttled(t0 + 1_000, 'ra')];
    for (let at = t0 + 4_000; at < t0 + 20_000; at += 1_000) ignoring.push(call(at, 'ra'));
    const findings = judgeAll(ignoring);
    expect(checksOf(findings)).toEqual(['client-retry-after']);
    expect(findings[0]!.exchanges[0]!.status).toBe(429);
    expect(findings[0]!.window.from).toBe(t0 + 1_000);

    const waiting = [
      issue(t0, 'rb'),
      issue(t0, 'other'),
      throttled(t0 + 1_000, 'rb'),
      // Set out before the answer arrived (a worker of the same process).
      call(t0 + 1_100, 'rb'),
      call(t0 + 2_500, 'rb'),
      // Another process's token is not told to wait.
      ...Array.from({ length: 20 }, (_, n) => call(t0 + 3_000 + n * 1_000, 'other')),
      call(t0 + 30_500, 'rb'),
      call(t0 + 31_500, 'rb'),
    ];
    expect(judgeAll(waiting.sort((a, b) => a.at - b.at))).toEqual([]);
  });

  it('a client refused at every early call is still counted (the count is not restarted)', () => {
    const hammering = [issue(t0, 'rc'), throttled(t0, 'rc')];
    for (let at = t0 + 3_000; at < t0 + 10_000; at += 1_000) hammering.push(throttled(at, 'rc'));
    expect(checksOf(judgeAll(hammering))).toEqual(['client-retry-after']);
  });
});

describe('client-revocation-recovery', () => {
  const refused = (at: number, fingerprint: string) =>
    call(at, fingerprint, { status: 401, error: 'invalid_token' });

  it('flags a revoked token sent again and again, not one renewed after calls in flight', () => {
    const looping = [issue(t0, 'rv')];
    for (let n = 0; n < 30; n += 1) looping.push(refused(t0 + 1_000 + n * 500, 'rv'));
    const findings = judgeAll(looping);
    expect(checksOf(findings)).toEqual(['client-revocation-recovery']);
    expect(findings[0]!.detail).toMatch(
      /refused 401 invalid_token at .* presented again 11 times after \(10 tolerated/,
    );

    const recovering = [
      issue(t0, 'rw'),
      refused(t0 + 1_000, 'rw'),
      refused(t0 + 1_050, 'rw'),
      refused(t0 + 1_900, 'rw'),
      issue(t0 + 1_300, 'rw2'),
      call(t0 + 1_500, 'rw2'),
      ...Array.from({ length: 30 }, (_, n) => call(t0 + 2_000 + n * 500, 'rw2')),
    ];
    expect(judgeAll(recovering.sort((a, b) => a.at - b.at))).toEqual([]);
  });

  it('an expired token refused is judged by client-no-expired-token, not here', () => {
    const late = [issue(t0, 'ex')];
    for (let n = 0; n < 30; n += 1) late.push(refused(t0 + lifetime + 1_000 + n * 100, 'ex'));
    expect(checksOf(judgeAll(late))).toEqual([]);
  });
});

describe('client-no-expired-token', () => {
  it('flags a token sent past its expiry beyond the grace, not one renewed at expiry on a skewed clock', () => {
    const expired = [
      issue(t0, 'ea'),
      call(t0 + lifetime + 45_000, 'ea', { status: 401, error: 'invalid_token' }),
    ];
    const findings = judgeAll(expired);
    expect(checksOf(findings)).toEqual(['client-no-expired-token']);
    expect(findings[0]!.detail).toMatch(/45 s after it expired at/);

    // Leeway 0, a clock 5 s behind, a call in flight: up to 5.3 s late, then renewed.
    const onTime = [
      issue(t0, 'eb'),
      call(t0 + lifetime + 5_300, 'eb', { status: 401, error: 'invalid_token' }),
      issue(t0 + lifetime + 5_600, 'ec'),
      call(t0 + lifetime + 5_900, 'ec'),
    ];
    expect(judgeAll(onTime)).toEqual([]);
  });
});

describe('client-granted-scope-respected', () => {
  const outside = (at: number, fingerprint: string) =>
    call(at, fingerprint, {
      method: 'POST',
      path: `/v3/partner/${partnerId}/repayments`,
      status: 403,
      error: 'insufficient_scope',
    });

  it('flags repeated 403 insufficient_scope, not one per process of a fleet learning its grant', () => {
    const ignoring = [issue(t0, 'sa')];
    for (let n = 0; n < 12; n += 1) ignoring.push(outside(t0 + 1_000 + n * 10_000, 'sa'));
    const findings = judgeAll(ignoring);
    expect(checksOf(findings)).toEqual(['client-granted-scope-respected']);
    expect(findings[0]!.detail).toMatch(
      /^11 API calls refused 403 insufficient_scope .* granted "read:loans"/,
    );

    const learning = Array.from({ length: 10 }, (_, n) => [
      issue(t0 + n, `sl-${n}`),
      outside(t0 + 1_000 + n, `sl-${n}`),
    ]).flat();
    expect(judgeAll(learning)).toEqual([]);
  });
});

describe('client-bearer-header', () => {
  it('flags repeated calls without a token, not a stray probe or two', () => {
    const bare = Array.from({ length: 15 }, (_, n) =>
      call(t0 + n * 1_000, undefined, { status: 401, error: 'invalid_request' }),
    );
    expect(checksOf(judgeAll(bare))).toEqual(['client-bearer-header']);
    expect(judgeAll([...bare.slice(0, 5), ...cached(t0, 60_000, 1_000)].sort((a, b) => a.at - b.at))).toEqual(
      [],
    );
  });
});

describe('client-own-partner', () => {
  it('flags a call on another partner’s path, not calls on its own', () => {
    const foreign = [
      issue(t0, 'op'),
      call(t0 + 100, 'op', { path: '/v3/partner/partner-b/loans', status: 403 }),
    ];
    expect(checksOf(judgeAll(foreign))).toEqual(['client-own-partner']);
    expect(judgeAll(cached(t0, 60_000, 1_000))).toEqual([]);
  });
});

describe('episodes, order and state', () => {
  /** A token per call for `hours`, 1 call every 5 s. */
  const perCall = (from: number, hours: number) => {
    const out: Exchange[] = [];
    for (let at = from; at < from + hours * hour; at += 5_000)
      out.push(issue(at, `e-${at}`), call(at + 100, `e-${at}`));
    return out;
  };

  it('a check that keeps failing raises one finding; after an hour clean, a new episode another', () => {
    expect(checksOf(judgeAll(perCall(t0, 3)))).toEqual(['client-token-reuse']);
    const twice = [
      ...perCall(t0, 2),
      ...cached(t0 + 2 * hour, 3 * hour, 10_000, 'calm'),
      ...perCall(t0 + 5 * hour, 2),
    ];
    expect(checksOf(judgeAll(twice.sort((a, b) => a.at - b.at)))).toEqual([
      'client-token-reuse',
      'client-token-reuse',
    ]);
  });

  it('exchanges out of order by up to the skew give the findings of the ordered stream', () => {
    const stream = [...perCall(t0, 2), ...cached(t0, 2 * hour, 3_000, 'x')].sort((a, b) => a.at - b.at);
    const ordered = judgeAll(stream);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 31 }), (seed) => {
        let state = seed;
        const random = () => {
          state = (state * 48_271) % 2_147_483_647;
          return state / 2_147_483_647;
        };
        const shuffled = stream
          .map((exchange) => ({ exchange, sent: exchange.at + random() * (defaultThresholds.skewMs - 1) }))
          .sort((a, b) => a.sent - b.sent)
          .map((item) => item.exchange);
        const judge = createPartnerJudge(partnerId);
        const found: Finding[] = [];
        for (let i = 0; i < shuffled.length; i += 97) found.push(...judge.observe(shuffled.slice(i, i + 97)));
        found.push(...judge.observe([tick(t0 + 3 * hour)]));
        expect(found).toEqual(ordered);
      }),
      { numRuns: 5 },
    );
  });

  it('state(): judge half, serialise, resume, judge the rest = one pass', () => {
    const stream = [
      ...perCall(t0, 2),
      issue(t0, 'r'),
      ...Array.from({ length: 40 }, (_, n) =>
        call(t0 + hour + n * 1_000, 'r', n === 0 ? { status: 401, error: 'invalid_token' } : {}),
      ),
      issue(t0, 'w'),
      call(t0 + 30 * 60_000, 'w', { status: 429, retryAfterSeconds: 60 }),
      ...Array.from({ length: 10 }, (_, n) => call(t0 + 30 * 60_000 + 5_000 + n * 1_000, 'w')),
      tick(t0 + 3 * hour),
    ].sort((a, b) => a.at - b.at);
    const one = createPartnerJudge(partnerId).observe(stream);
    expect(checksOf(one).sort()).toEqual([
      'client-retry-after',
      'client-revocation-recovery',
      'client-token-reuse',
    ]);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: stream.length - 1 }), (cut) => {
        const first = createPartnerJudge(partnerId);
        const before = first.observe(stream.slice(0, cut));
        const saved = JSON.parse(JSON.stringify(first.state()));
        const resumed = createPartnerJudge(partnerId, { state: saved });
        expect([...before, ...resumed.observe(stream.slice(cut))]).toEqual(one);
      }),
      { numRuns: 25 },
    );
  });

  it('memory stays bounded under a flood of distinct fingerprints', () => {
    const judge = createPartnerJudge(partnerId);
    let findings = 0;
    for (let batch = 0; batch < 200; batch += 1) {
      const exchanges: Exchange[] = [];
      for (let n = 0; n < 1_000; n += 1) {
        const at = t0 + (batch * 1_000 + n) * 20;
        exchanges.push(
          issue(at, `flood-${batch}-${n}`),
          call(at + 5, `flood-${batch}-${n}`, { status: 401, error: 'invalid_token' }),
        );
      }
      findings += judge.observe(exchanges).length;
    }
    const state = judge.state() as { tokens: unknown[]; held: unknown[] };
    expect(state.tokens.length).toBe(defaultThresholds.maxFingerprints);
    expect(state.held.length).toBeLessThanOrEqual(defaultThresholds.maxPending);
    const bytes = JSON.stringify(state).length;
    console.log(
      `flood: 400 000 exchanges, 200 000 fingerprints → state ${bytes} bytes, ${findings} findings`,
    );
    expect(bytes).toBeLessThan(1_500_000);
    // Negative control: a tiny bound gives a tiny state, so the bound is what holds it.
    const small = createPartnerJudge(partnerId, { thresholds: { maxFingerprints: 10, maxPending: 10 } });
    small.observe(Array.from({ length: 5_000 }, (_, n) => issue(t0 + n, `s-${n}`)));
    expect((small.state() as { tokens: unknown[] }).tokens.length).toBe(10);
  });
});

describe('catalogue and input', () => {
  it('every client check is judged or listed with a reason', async () => {
    const { clientCheckIds } = await import('@partner-lending/conformance');
    const listed = [...judgedInProduction, ...Object.keys(notJudgedInProduction)].sort();
    expect(listed).toEqual([...clientCheckIds].sort());
  });

  it('refuses bad thresholds, a foreign state and a malformed exchange with what to do', () => {
    expect(() => createPartnerJudge(partnerId, { thresholds: { skewMs: -1 } })).toThrow(
      'thresholds.skewMs must be a finite number ≥ 0, got -1; leave it out for its default (5000)',
    );
    expect(() => createPartnerJudge(partnerId, { thresholds: { reuseWindowMs: 90_000 } })).toThrow(
      /multiple of 60000/,
    );
    expect(() => createPartnerJudge(partnerId, { thresholds: { reuseShortWindowMs: 7_000 } })).toThrow(
      /whole 5-s steps: a multiple of 5000 ms, got 7000/,
    );
    expect(() => createPartnerJudge(partnerId, { thresholds: { nope: 1 } as never })).toThrow(
      /unknown threshold "nope"/,
    );
    expect(() => createPartnerJudge(partnerId, { state: { version: 2 } })).toThrow(
      /not a state this judge wrote/,
    );
    const other = createPartnerJudge('partner-b').state();
    expect(() => createPartnerJudge(partnerId, { state: other })).toThrow(/"partner-b"'s, not "partner-a"'s/);
    const judge = createPartnerJudge(partnerId);
    expect(() => judge.observe([call(t0, 'a'), { ...call(t0, 'b'), at: Number.NaN }])).toThrow(
      /exchange 1 has at NaN; .* Nothing of this batch was judged/,
    );
    expect((judge.state() as { held: unknown[] }).held).toEqual([]);
    // Another partner's exchanges are passed over.
    expect(judgeAll([{ ...call(t0, undefined, { status: 401 }), partnerId: 'partner-b' }])).toEqual([]);
  });
});
