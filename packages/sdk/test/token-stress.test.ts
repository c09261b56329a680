// Never an expired token at the API, and a fresh token always usable (issue 53): the SDK on 2-s and 1-s
// tokens from the real mock (whole-second iat/exp, expires_in one second short), hundreds of concurrent
// callers, the event loop stalled at random and in each token's last 30 ms. TOKEN_STRESS_CALLS sets the number of
// calls of each round (default 10,000; 100,000 for the full run).
import { createTokenProvider } from '@partner-lending/auth';
import { type RunningMock, startMock } from '@partner-lending/mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPartnerClient, PartnerApiError } from '../src/index.js';
import { createTransport } from '../src/transport.js';

const CALLS = Number(process.env.TOKEN_STRESS_CALLS ?? 10_000);
const CALLERS = 200;
/** Each caller waits 0–2× this between its calls, so that the machine is loaded but not saturated. */
const THINK_MS = 250;

let mock: RunningMock;
beforeAll(async () => {
  // 127.0.0.1, random ports; the lifetime is set per round (setTokenTtl).
  mock = await startMock({ tokenTtlSeconds: 2 });
});
afterAll(() => mock.close());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Busy-waits until `ms` milliseconds have passed: the event loop is stalled (no timer, socket or promise runs). */
function busy(ms: number) {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // stalled
  }
}

/**
 * Stalls the event loop until stopped, in two ways at once: 50–400 ms at random moments (every 0.2–1 s),
 * and 100 ms starting 30 ms before every whole second, the moment the mock's tokens expire (their `exp`
 * is a whole second). The aimed stall makes the edge case certain rather than a matter of luck: every
 * call handed a token in its last 30 ms is checked by the API after the token expired.
 */
function stallAtRandom() {
  let stop = false;
  let stalls = 0;
  const random = (async () => {
    while (!stop) {
      await sleep(200 + Math.random() * 800);
      busy(50 + Math.random() * 350);
      stalls++;
    }
  })();
  const aimed = (async () => {
    while (!stop) {
      const wait = (1000 - (Date.now() % 1000) - 30 + 1000) % 1000;
      await sleep(wait);
      if (stop) break;
      busy(100);
      stalls++;
      // Past the second boundary now: the next stall aims at the next one.
      await sleep(100);
    }
  })();
  return {
    async stop() {
      stop = true;
      await Promise.all([random, aimed]);
      return stalls;
    },
  };
}

interface Round {
  failed: number;
  /** What the failures were, by code and the start of the message (no token: messages never carry one). */
  failures: Map<string, number>;
  /** 401 answers the API sent (each one a token that expired between its hand-over and the API's check). */
  refused: number;
  stalls: number;
  seconds: number;
}

/** `calls` calls over CALLERS concurrent callers while the loop stalls at random; `call` makes one. */
async function run(
  calls: number,
  call: () => Promise<void>,
  refused: () => number,
  stalling = true,
): Promise<Round> {
  const failures = new Map<string, number>();
  let failed = 0;
  let started = 0;
  const before = refused();
  const stalls = stalling ? stallAtRandom() : { stop: async () => 0 };
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      await sleep(Math.random() * THINK_MS);
      while (started < calls) {
        started++;
        try {
          await call();
        } catch (error) {
          failed++;
          const what =
            error instanceof PartnerApiError
              ? `${error.code} ${error.message.slice(0, 100)}`
              : String(error).slice(0, 100);
          failures.set(what, (failures.get(what) ?? 0) + 1);
        }
        await sleep(Math.random() * 2 * THINK_MS);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  return { failed, failures, refused: refused() - before, stalls: await stalls.stop(), seconds };
}

/** Counts the API's 401 answers as they reach the client (the SDK replays them). */
function countingFetch() {
  let refused = 0;
  const fetchImpl: typeof fetch = async (input, init) => {
    const answer = await fetch(input, init);
    if (answer.status === 401) refused++;
    return answer;
  };
  return { fetch: fetchImpl, refused: () => refused };
}

function providerFor(index: number, fetchImpl: typeof fetch, hardWindowMs?: number) {
  const credentials = mock.clients[index] ?? mock.clients[0];
  if (credentials === undefined) throw new Error('the mock has no client');
  return createTokenProvider({
    authUrl: mock.authUrl,
    audience: mock.audience,
    clientId: credentials.clientId,
    clientSecret: credentials.clientSecret,
    fetch: fetchImpl,
    ...(hardWindowMs === undefined ? {} : { refresh: { hardWindowMs } }),
  });
}

describe('never an expired token at the API, under stalls and hundreds of callers', {
  timeout: 600_000,
}, () => {
  // 2-s tokens with and without stalls, 1-s tokens with them (the harder case).
  for (const [ttl, stalling] of [
    [2, true],
    [2, false],
    [1, true],
  ] as const) {
    const how = stalling
      ? "the loop stalled 50–400 ms at random and in each token's last 30 ms"
      : 'no stalls';
    it(`${ttl}-s tokens (expires_in 1 s, whole-second exp): ${CALLS} calls by ${CALLERS} callers, ${how}: 0 failed`, async () => {
      mock.setTokenTtl(ttl);
      const counting = countingFetch();
      const client = createPartnerClient({
        authUrl: mock.authUrl,
        baseUrl: mock.baseUrl,
        tokenProvider: providerFor(0, counting.fetch),
        fetch: counting.fetch,
        timeoutMs: 60_000,
      });
      const tokensBefore = mock.tokenRequestCount();
      const round = await run(
        CALLS,
        async () => {
          await client.loans.list({ limit: 1 });
        },
        counting.refused,
        stalling,
      );
      const tokens = mock.tokenRequestCount() - tokensBefore;
      console.info(
        `${ttl}-s tokens, ${stalling ? 'stalls' : 'no stalls'}: ${CALLS} calls in ${round.seconds.toFixed(1)} s, ${round.stalls} stalls, ${round.refused} refused by the API and replayed, ${tokens} token requests, ${round.failed} failed`,
      );
      expect(Object.fromEntries(round.failures)).toEqual({});
      expect(round.failed).toBe(0);
      if (stalling) expect(round.stalls).toBeGreaterThan(0);
      else expect(round.stalls).toBe(0);
    });
  }

  it('negative control: the same callers, stalls and 1-s tokens, a client without the safety window and without the replays after a 401: calls fail with expired tokens', async () => {
    mock.setTokenTtl(1);
    const counting = countingFetch();
    // No safety window: a token is handed out up to its last millisecond (as a cache keyed on expiry alone).
    const provider = providerFor(1, counting.fetch, 0);
    const transport = createTransport({
      fetch: counting.fetch,
      tokens: {
        getToken: (scopes, signal, timeoutMs) =>
          provider.getToken(scopes ? { scopes, signal, timeoutMs } : { signal, timeoutMs }),
        invalidate: (token) => provider.invalidate(token),
      },
      origin: `${new URL(mock.baseUrl).origin}/`,
      timeoutMs: 60_000,
      maxRetries: 0,
      now: Date.now,
      sleep: async (ms) => {
        await sleep(ms);
      },
      random: Math.random,
      maxAuthReplays: 0,
    });
    const partnerId = mock.clients[1]?.partnerId;
    const url = `${mock.baseUrl}/v3/partner/${partnerId}/loans?limit=1`;
    const refusals = new Map<string, number>();
    // The stalls aimed at each token's last 30 ms catch the calls in flight at that moment: 3 to 191 in
    // a round of 3000 here (a round of random stalls alone once missed the edge five times running on a
    // fast machine). Up to five rounds, stopping at the first that fails: a miss in all five would take
    // odds below one in a million even at the lowest rate.
    let round = { stalls: 0, failed: 0, refused: 0 };
    let rounds = 0;
    while (round.failed === 0 && rounds < 5) {
      rounds += 1;
      round = await run(
        3_000,
        async () => {
          const answer = await transport(new Request(url), { scopes: ['read:loans'] });
          const challenge = answer.headers.get('www-authenticate') ?? '';
          await answer.body?.cancel();
          if (answer.status !== 200) {
            refusals.set(challenge, (refusals.get(challenge) ?? 0) + 1);
            throw new Error(`${answer.status}`);
          }
        },
        counting.refused,
      );
    }
    console.info(
      `negative control: round ${rounds} of 3000 calls, ${round.stalls} stalls, ${round.failed} failed (${round.refused} refused by the API)`,
    );
    expect(round.failed).toBeGreaterThan(0);
    // Every failure is the API refusing an expired token.
    expect([...refusals.keys()].every((challenge) => challenge.includes('the access token expired'))).toBe(
      true,
    );
  }, 120_000);
});
