import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  PartnerApiError,
  ScopeNotGrantedError,
  TokenAbortedError,
  TokenThrottledError,
  TokenTimeoutError,
} from '../src/errors.js';
import type { TokenEvent } from '../src/token-event.js';
import { createTokenProvider } from '../src/token-provider.js';
import { MAX_THROTTLE_MS } from '../src/token-request.js';
import { createMemoryTokenStore, type StoredToken, type TokenStore } from '../src/token-store.js';
import { providerFor } from './support/provider.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  fakeClock,
  startTokenServer,
  type TokenServer,
} from './support/token-server.js';

let server: TokenServer;
beforeAll(async () => {
  server = await startTokenServer();
});
afterAll(() => server.close());
afterEach(() => {
  server.next();
  server.requests.length = 0;
});

const count = () => server.requests.length;

describe('getToken', () => {
  it('returns the token with what the server said, token_type normalised to Bearer', async () => {
    const provider = providerFor(server);
    const before = Date.now();
    const token = await provider.getToken({ scopes: ['read:loans'] });
    expect(token.accessToken).toBe(server.issued.at(-1));
    expect(token.tokenType).toBe('Bearer');
    expect(token.grantedScopes).toEqual(['read:loans']);
    expect(token.partnerId).toBe('partner-123');
    expect(token.issuer).toBe(server.issuer);
    expect(token.jti).toMatch(/^[0-9a-f-]{36}$/);
    // expires_in (3599) is one second short of the JWT lifetime: the smaller one wins.
    expect(token.expiresAt).toBeGreaterThanOrEqual(before + 3599_000);
    expect(token.expiresAt).toBeLessThanOrEqual(Date.now() + 3599_000);
  });

  it('takes the expiry from exp when exp comes before request start + expires_in', async () => {
    const clock = fakeClock();
    const local = await startTokenServer({ now: clock.now });
    try {
      local.next((_r, issue) =>
        issue({ ttlSeconds: 600, response: { expires_in: 7200 } }).then((body) => ({ body })),
      );
      const token = await providerFor(local, { clock }).getToken();
      expect(token.expiresAt).toBe(Math.floor(clock.now() / 1000) * 1000 + 600_000);
      local.next((_r, issue) =>
        issue({ ttlSeconds: 600, response: { expires_in: '300' } }).then((body) => ({ body })),
      );
      const second = await providerFor(local, { clock }).getToken();
      expect(second.expiresAt).toBe(clock.now() + 300_000);
    } finally {
      await local.close();
    }
  });
});

describe('cache', () => {
  it('serves repeated calls from the cache', async () => {
    const provider = providerFor(server);
    const first = await provider.getToken({ scopes: ['read:loans'] });
    const second = await provider.getToken({ scopes: ['read:loans'] });
    expect(second.accessToken).toBe(first.accessToken);
    expect(count()).toBe(1);
  });

  it('keys on the sorted scope set: order and duplicates do not matter, other sets do', async () => {
    const provider = providerFor(server);
    await provider.getToken({ scopes: ['read:loans', 'create:loan_draft'] });
    await provider.getToken({ scopes: ['create:loan_draft', 'read:loans', 'read:loans'] });
    expect(count()).toBe(1);
    await provider.getToken({ scopes: ['create:repayment'] });
    expect(count()).toBe(2);
  });

  it('lets a cached token with broader granted scopes serve a narrower request, not the reverse', async () => {
    const provider = providerFor(server);
    const broad = await provider.getToken({ scopes: ['create:loan_draft', 'read:loans'] });
    const narrow = await provider.getToken({ scopes: ['read:loans'] });
    expect(narrow.accessToken).toBe(broad.accessToken);
    expect(count()).toBe(1);
    const wider = await provider.getToken({ scopes: ['create:repayment', 'read:loans'] });
    expect(wider.accessToken).not.toBe(broad.accessToken);
    expect(count()).toBe(2);
  });

  it('serves any narrower request from a token asked for with no scope (all authorised scopes)', async () => {
    const provider = providerFor(server);
    const all = await provider.getToken();
    expect(all.grantedScopes).toEqual([
      'create:journal_update',
      'create:loan_draft',
      'create:repayment',
      'read:loans',
    ]);
    expect((await provider.getToken({ scopes: ['create:repayment'] })).accessToken).toBe(all.accessToken);
    expect(count()).toBe(1);
  });

  it('prefers a broader token that covers the request over an exact entry that lacks a scope', async () => {
    const provider = providerFor(server);
    server.next(async (_r, issue) => ({
      body: await issue({ response: { scope: '' }, claims: { scope: [] } }),
    }));
    await expect(provider.getToken({ scopes: ['read:loans'] })).rejects.toBeInstanceOf(ScopeNotGrantedError);
    const all = await provider.getToken();
    expect((await provider.getToken({ scopes: ['read:loans'] })).accessToken).toBe(all.accessToken);
    expect(count()).toBe(2);
  });

  it('keys on token URL, client id and audience: a shared store does not mix them up', async () => {
    const store = createMemoryTokenStore();
    const other = await startTokenServer({ audience: 'https://other-api.example' });
    try {
      await providerFor(server, { store }).getToken();
      await providerFor(server, { store, audience: 'https://other-api.example' }).getToken();
      expect(count()).toBe(2);
      await providerFor(other, { store }).getToken();
      expect(other.tokenRequests()).toBe(1);
      await providerFor(server, { store, clientId: 'another-client' })
        .getToken()
        .catch(() => {});
      expect(count()).toBe(3);
      await providerFor(server, { store }).getToken();
      expect(count()).toBe(3);
    } finally {
      await other.close();
    }
  });

  it('uses the scopes option when getToken names none', async () => {
    const provider = providerFor(server, { scopes: ['read:loans', 'create:loan_draft'] });
    const token = await provider.getToken();
    expect(server.requests[0]?.form.get('scope')).toBe('create:loan_draft read:loans');
    expect(token.grantedScopes).toEqual(['create:loan_draft', 'read:loans']);
  });
});

describe('refresh ahead', () => {
  const setup = async (options: { random?: () => number; events?: TokenEvent[] } = {}) => {
    const clock = fakeClock();
    const local = await startTokenServer({ now: clock.now, ttlSeconds: 3601 });
    const events = options.events ?? [];
    const provider = providerFor(local, {
      clock,
      random: options.random ?? (() => 0),
      onEvent: (e) => events.push(e),
    });
    const first = await provider.getToken();
    return { clock, local, provider, first, events };
  };

  it('serves the cached token until the soft window (max(60 s, 10 % of lifetime)) begins', async () => {
    const { clock, local, provider, first, events } = await setup();
    try {
      // lifetime 3600 s → soft window 360 s. A refresh would have been started (and reported) by now.
      clock.set(first.expiresAt - 361_000);
      expect((await provider.getToken()).accessToken).toBe(first.accessToken);
      expect(events.filter((e) => e.type === 'token-requested')).toHaveLength(1);
      expect(events.filter((e) => e.type === 'background-refresh')).toHaveLength(0);
      expect(local.tokenRequests()).toBe(1);
    } finally {
      await local.close();
    }
  });

  it('inside the soft window serves the current token and refreshes once in the background', async () => {
    const { clock, local, provider, first, events } = await setup();
    try {
      clock.set(first.expiresAt - 359_000);
      const served = await Promise.all([provider.getToken(), provider.getToken(), provider.getToken()]);
      expect(served.map((t) => t.accessToken)).toEqual([
        first.accessToken,
        first.accessToken,
        first.accessToken,
      ]);
      await vi.waitFor(
        () => expect(events.some((e) => e.type === 'token-received' && e.background)).toBe(true),
        { timeout: 5000 },
      );
      expect(local.tokenRequests()).toBe(2);
      expect(events.filter((e) => e.type === 'background-refresh')).toHaveLength(1);
      const next = await provider.getToken();
      expect(next.accessToken).toBe(local.issued[1]);
      expect(next.accessToken).not.toBe(first.accessToken);
    } finally {
      await local.close();
    }
  });

  it('jitters the soft window per token so replicas do not refresh together', async () => {
    const { clock, local, provider, first } = await setup({ random: () => 1 });
    try {
      // jitterRatio 0.2 and random 1 → the window grows to 432 s: 400 s before expiry is already inside.
      clock.set(first.expiresAt - 400_000);
      expect((await provider.getToken()).accessToken).toBe(first.accessToken);
      await vi.waitFor(() => expect(local.tokenRequests()).toBe(2), { timeout: 5000 });
    } finally {
      await local.close();
    }
  });

  it('keeps serving the current token when the background refresh fails', async () => {
    const { clock, local, provider, first, events } = await setup();
    try {
      local.next(() => ({ status: 400, body: { error: 'invalid_request' } }));
      clock.set(first.expiresAt - 100_000);
      expect((await provider.getToken()).accessToken).toBe(first.accessToken);
      await vi.waitFor(
        () => expect(events.some((e) => e.type === 'token-request-failed' && e.background)).toBe(true),
        { timeout: 5000 },
      );
      expect((await provider.getToken()).accessToken).toBe(first.accessToken);
    } finally {
      await local.close();
    }
  });

  it('after a failed background refresh, waits retry.maxDelayMs before the next one (no request storm)', async () => {
    const { clock, local, provider, first, events } = await setup();
    try {
      const refused = () => ({ status: 400, body: { error: 'invalid_request' } });
      local.next(refused, refused, refused, refused, refused);
      const started = () => events.filter((e) => e.type === 'background-refresh').length;
      const failed = () => events.filter((e) => e.type === 'token-request-failed' && e.background).length;
      // Each call waits until every refresh it may have started has failed, then the next one comes.
      const call = async () => {
        expect((await provider.getToken()).accessToken).toBe(first.accessToken);
        await vi.waitFor(() => expect(failed()).toBe(started()), { timeout: 5000 });
      };
      clock.set(first.expiresAt - 100_000);
      await call();
      expect(started()).toBe(1);
      for (let i = 0; i < 4; i++) await call();
      expect(started()).toBe(1);
      expect(local.tokenRequests()).toBe(2);
      clock.advance(5_000); // retry.maxDelayMs later
      await call();
      expect(started()).toBe(2);
      expect(local.tokenRequests()).toBe(3);
    } finally {
      await local.close();
    }
  });

  it('blocks for a fresh token inside the hard window (5 s)', async () => {
    const { clock, local, provider, first } = await setup();
    try {
      clock.set(first.expiresAt - 4_000);
      const next = await provider.getToken();
      expect(next.accessToken).not.toBe(first.accessToken);
      expect(local.tokenRequests()).toBe(2);
    } finally {
      await local.close();
    }
  });

  it('honours the window options', async () => {
    const clock = fakeClock();
    const local = await startTokenServer({ now: clock.now, ttlSeconds: 3601 });
    try {
      const events: TokenEvent[] = [];
      const provider = providerFor(local, {
        clock,
        random: () => 1,
        refresh: { softWindowMs: 10_000, softWindowRatio: 0, hardWindowMs: 1_000, jitterRatio: 0 },
        onEvent: (e) => events.push(e),
      });
      const first = await provider.getToken();
      clock.set(first.expiresAt - 11_000);
      await provider.getToken();
      expect(events.filter((e) => e.type === 'token-requested')).toHaveLength(1);
      clock.set(first.expiresAt - 1_500);
      expect((await provider.getToken()).accessToken).toBe(first.accessToken);
      await vi.waitFor(() => expect(local.tokenRequests()).toBe(2), { timeout: 5000 });
    } finally {
      await local.close();
    }
  });

  it('scales the windows down for short-lived tokens: soft at most 12 %, hard at most 5 % of the lifetime', async () => {
    const clock = fakeClock();
    const local = await startTokenServer({ now: clock.now, ttlSeconds: 61 });
    try {
      const events: TokenEvent[] = [];
      const provider = providerFor(local, { clock, onEvent: (e) => events.push(e) });
      // lifetime 60 s: soft window max(60 s, 6 s) → capped to 7.2 s; hard window min(5 s, 3 s) = 3 s.
      const first = await provider.getToken();
      clock.set(first.expiresAt - 7_300);
      await provider.getToken();
      expect(events.filter((e) => e.type === 'background-refresh')).toHaveLength(0);
      clock.set(first.expiresAt - 7_100);
      expect((await provider.getToken()).accessToken).toBe(first.accessToken);
      expect(events.filter((e) => e.type === 'background-refresh')).toHaveLength(1);
      await vi.waitFor(() => expect(local.tokenRequests()).toBe(2), { timeout: 5000 });
    } finally {
      await local.close();
    }
  });

  it('serves a 2-s token from the cache until its last 12 % (or 300 ms), waits only in its hard window', async () => {
    const clock = fakeClock();
    const local = await startTokenServer({ now: clock.now, ttlSeconds: 3 });
    try {
      const events: TokenEvent[] = [];
      const provider = providerFor(local, {
        clock,
        onEvent: (e) => events.push(e),
        refresh: { clockSkewMs: 0 },
      });
      const first = await provider.getToken();
      const lifetime = first.expiresAt - clock.now();
      expect(lifetime).toBeGreaterThan(1_000);
      // The hard window is 5 % of the lifetime but at least 300 ms (at most a fifth of the lifetime).
      clock.set(first.expiresAt - Math.max(0.13 * lifetime, 320));
      expect((await provider.getToken()).accessToken).toBe(first.accessToken);
      expect(local.tokenRequests()).toBe(1);
      expect(events.filter((e) => e.type === 'cache-hit')).toHaveLength(1);
      // Inside the hard window a caller waits for a new token.
      clock.set(first.expiresAt - 0.04 * lifetime);
      const next = await provider.getToken();
      expect(next.accessToken).not.toBe(first.accessToken);
    } finally {
      await local.close();
    }
  });

  it('renews a short token whose exp is a whole second at its exp, not before (asked earlier, it would gain only 1 s)', async () => {
    // exp = floor(now) + 2 and expires_in = 2, as an RFC 9068 server counting from the current second.
    const clock = fakeClock(Date.UTC(2026, 0, 1, 0, 0, 0, 300));
    const local = await startTokenServer({ now: clock.now, ttlSeconds: 2 });
    local.fallback = async (_request, issue) => ({ body: await issue({ response: { expires_in: 2 } }) });
    const arrivals: number[] = [];
    const waits: number[] = [];
    try {
      const provider = providerFor(local, {
        clock,
        refresh: { clockSkewMs: 0 },
        sleep: async (ms) => {
          waits.push(ms);
          clock.advance(ms);
        },
        fetch: (input, init) => {
          arrivals.push(clock.now());
          return fetch(input, init);
        },
      });
      const first = await provider.getToken();
      expect(first.expiresAt % 1000).toBe(0);
      expect(first.expiresAt - clock.now()).toBe(1_700);
      // No background refresh ahead of the exp: the token is served until its hard window (300 ms).
      clock.set(first.expiresAt - 320);
      expect((await provider.getToken()).accessToken).toBe(first.accessToken);
      expect(local.tokenRequests()).toBe(1);
      // In the hard window the caller waits until the exp, then one request: the new token lives 2 s.
      clock.set(first.expiresAt - 80);
      const second = await provider.getToken();
      expect(waits).toEqual([80]);
      expect(arrivals[1]).toBe(first.expiresAt);
      expect(second.expiresAt - first.expiresAt).toBe(2_000);
      expect(local.tokenRequests()).toBe(2);
    } finally {
      await local.close();
    }
  });

  it('allows for clock skew when checking exp (default 30 s, configurable)', async () => {
    const serverClock = fakeClock();
    const local = await startTokenServer({ now: serverClock.now, ttlSeconds: 60 });
    try {
      // This machine's clock runs 70 s ahead: the fresh token's exp looks 10 s past.
      const ahead = { now: () => serverClock.now() + 70_000 };
      await expect(providerFor(local, { clock: ahead }).getToken()).resolves.toMatchObject({
        tokenType: 'Bearer',
      });
      // The same allowance applies when the signature is verified (jose's clockTolerance).
      await expect(
        providerFor(local, { clock: ahead, verify: { jwks: local.jwks } }).getToken(),
      ).resolves.toMatchObject({ tokenType: 'Bearer' });
      await expect(
        providerFor(local, { clock: ahead, refresh: { clockSkewMs: 0 } }).getToken(),
      ).rejects.toMatchObject({
        code: 'ERR_TOKEN_RESPONSE',
        message: expect.stringContaining('has already passed'),
      });
    } finally {
      await local.close();
    }
  });
});

describe('never an expired token', () => {
  it('a token that expired while its caller waited is not handed out: one more request, then a live token', async () => {
    const clock = fakeClock();
    const local = await startTokenServer({ now: clock.now, ttlSeconds: 10 });
    try {
      const provider = providerFor(local, { clock });
      // The first answer takes (on this clock) longer than the token lives.
      local.next(async (_request, issue) => {
        const body = await issue();
        clock.advance(11_000);
        return { body };
      });
      const token = await provider.getToken();
      expect(local.tokenRequests()).toBe(2);
      expect(token.accessToken).toBe(local.issued[1]);
      expect(token.expiresAt).toBeGreaterThan(clock.now());
    } finally {
      await local.close();
    }
  });

  it('a 1-s token the server rounds down to a few ms is not handed out: it is renewed at its exp and the caller gets a whole second', async () => {
    // exp = floor(now) + 1 and expires_in 1, asked for at x.990 s: the token lives 10 ms.
    const clock = fakeClock(Date.UTC(2026, 0, 1, 0, 0, 0, 990));
    const local = await startTokenServer({ now: clock.now, ttlSeconds: 1 });
    local.fallback = async (_request, issue) => ({ body: await issue({ response: { expires_in: 1 } }) });
    try {
      const provider = providerFor(local, {
        clock,
        refresh: { clockSkewMs: 0 },
        sleep: async (ms) => clock.advance(ms),
      });
      const token = await provider.getToken();
      expect(local.tokenRequests()).toBe(2);
      expect(token.expiresAt - clock.now()).toBe(1_000);
    } finally {
      await local.close();
    }
  });

  it('minValidityMs: a held token with less life left is replaced; one in the first half of its life serves any wish', async () => {
    const clock = fakeClock(Date.UTC(2026, 0, 1, 0, 0, 0, 500));
    const local = await startTokenServer({ now: clock.now, ttlSeconds: 10 });
    local.fallback = async (_request, issue) => ({ body: await issue({ response: { expires_in: 9 } }) });
    try {
      const provider = providerFor(local, { clock, refresh: { clockSkewMs: 0 } });
      const first = await provider.getToken();
      expect(first.expiresAt - clock.now()).toBe(9_000);
      clock.advance(6_000);
      // Control: 3 s left, more than the safety window (450 ms): served as it is without a wish.
      expect((await provider.getToken()).accessToken).toBe(first.accessToken);
      expect(local.tokenRequests()).toBe(1);
      // A caller whose last request took 4 s gets a token with more than that left.
      const second = await provider.getToken({ minValidityMs: 4_000 });
      expect(second.accessToken).not.toBe(first.accessToken);
      expect(second.expiresAt - clock.now()).toBeGreaterThan(4_000);
      expect(local.tokenRequests()).toBe(2);
      // A wish above half the lifetime is capped: a token in its first half serves it, no request.
      expect((await provider.getToken({ minValidityMs: 60_000 })).accessToken).toBe(second.accessToken);
      expect(local.tokenRequests()).toBe(2);
      await expect(provider.getToken({ minValidityMs: -1 })).rejects.toThrow(
        /minValidityMs must be a finite number ≥ 0/,
      );
    } finally {
      await local.close();
    }
  });

  it('a narrower request served by a broader token takes the warm path from the second call (no store read)', async () => {
    let reads = 0;
    const inner = createMemoryTokenStore();
    const store: TokenStore = {
      get: (key) => {
        reads++;
        return inner.get(key);
      },
      set: (key, value, ttl) => inner.set(key, value, ttl),
      delete: (key) => inner.delete(key),
    };
    const provider = providerFor(server, { store });
    const broad = await provider.getToken();
    const before = reads;
    const narrow = await provider.getToken({ scopes: ['read:loans'] });
    expect(narrow.accessToken).toBe(broad.accessToken);
    const afterFirst = reads;
    for (let i = 0; i < 100; i++) await provider.getToken({ scopes: ['read:loans'] });
    expect(afterFirst - before).toBe(1);
    expect(reads).toBe(afterFirst);
    expect(count()).toBe(1);
    // Dropping the broad token ends the shortcut: the next narrow call asks for its own.
    await provider.invalidate(broad);
    const own = await provider.getToken({ scopes: ['read:loans'] });
    expect(own.accessToken).not.toBe(broad.accessToken);
    expect(own.grantedScopes).toEqual(['read:loans']);
  });
});

describe('single flight', () => {
  it('1,000 concurrent getToken on a cold cache send exactly 1 token request', async () => {
    const provider = providerFor(server);
    const tokens = await Promise.all(
      Array.from({ length: 1000 }, () => provider.getToken({ scopes: ['read:loans'] })),
    );
    expect(count()).toBe(1);
    expect(new Set(tokens.map((t) => t.accessToken)).size).toBe(1);
  });

  it('a caller whose slow store read missed while the shared request completed does not send another', async () => {
    const inner = createMemoryTokenStore();
    let gate: Promise<void> | undefined;
    // A store whose reads can be held, as a remote (Redis) store's reads take a round trip.
    const store: TokenStore = {
      get: async (key) => {
        const held = gate;
        const value = await inner.get(key);
        if (held) await held;
        return value;
      },
      set: (key, value, ttlMs) => inner.set(key, value, ttlMs),
      delete: (key) => inner.delete(key),
    };
    const provider = providerFor(server, { store });
    let release = () => {};
    gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const late = provider.getToken(); // read the empty store; its answer arrives after the request below
    gate = undefined;
    const first = await provider.getToken();
    expect(count()).toBe(1);
    release();
    expect((await late).accessToken).toBe(first.accessToken);
    expect(count()).toBe(1);
  });

  it('shares one failure among concurrent and later callers until the backoff pause has passed', async () => {
    const clock = fakeClock();
    const provider = providerFor(server, { clock, retry: { maxRetries: 0 } });
    server.next(() => ({ status: 401, body: { error: 'invalid_client' } }));
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => provider.getToken()));
    expect(results.every((r) => r.status === 'rejected')).toBe(true);
    expect(count()).toBe(1);
    // Within the pause (retry.baseDelayMs after a first failure) a caller gets the same error, no request.
    clock.advance(199);
    const again = await provider.getToken().catch((e: unknown) => e);
    expect(again).toBe((results[0] as PromiseRejectedResult).reason);
    expect(count()).toBe(1);
    clock.advance(1);
    await provider.getToken();
    expect(count()).toBe(2);
  });

  it('rejects an already aborted signal with TokenAbortedError (the reason as cause), even on a cache hit', async () => {
    const provider = providerFor(server);
    const reason = new Error('caller gave up before asking');
    const first = await provider.getToken({ signal: AbortSignal.abort(reason) }).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(TokenAbortedError);
    expect(first).toBeInstanceOf(PartnerApiError);
    expect(first).toMatchObject({ code: 'ERR_TOKEN_ABORTED', cause: reason });
    expect(count()).toBe(0);
    await provider.getToken();
    await expect(provider.getToken({ signal: AbortSignal.abort(reason) })).rejects.toMatchObject({
      code: 'ERR_TOKEN_ABORTED',
      cause: reason,
    });
    expect(count()).toBe(1);
  });

  it('lets one caller stop waiting without cancelling the shared request', async () => {
    const provider = providerFor(server);
    const controller = new AbortController();
    const aborted = provider.getToken({ signal: controller.signal });
    const other = provider.getToken();
    const reason = new Error('caller gave up');
    controller.abort(reason);
    await expect(aborted).rejects.toMatchObject({ code: 'ERR_TOKEN_ABORTED', cause: reason });
    await expect(other).resolves.toMatchObject({ tokenType: 'Bearer' });
    expect(count()).toBe(1);
  });

  it('a TimeoutError reason, or timeoutMs, rejects with TokenTimeoutError in time; the request goes on', async () => {
    const provider = providerFor(server);
    server.next(async (_request, issue) => {
      await new Promise((r) => setTimeout(r, 400));
      return { body: await issue() };
    });
    let answered = false;
    const byOption = provider.getToken({ timeoutMs: 100 }).catch((e: unknown) => e);
    const bySignal = provider.getToken({ signal: AbortSignal.timeout(150) }).catch((e: unknown) => e);
    const patient = provider.getToken().finally(() => {
      answered = true;
    });
    const [a, b] = await Promise.all([byOption, bySignal]);
    // Both gave up before the token arrived (the endpoint takes 400 ms).
    expect(answered).toBe(false);
    expect(a).toBeInstanceOf(TokenTimeoutError);
    expect(a).toMatchObject({ code: 'ERR_TOKEN_TIMEOUT', timeoutMs: 100 });
    expect(b).toMatchObject({ code: 'ERR_TOKEN_TIMEOUT' });
    await expect(patient).resolves.toMatchObject({ tokenType: 'Bearer' });
    expect(count()).toBe(1);
    await expect(provider.getToken({ timeoutMs: 0 })).rejects.toThrow(
      /timeoutMs must be a finite number > 0/,
    );
  });
});

describe('scopes', () => {
  it('raises ScopeNotGrantedError naming the missing and the granted scopes', async () => {
    const local = await startTokenServer({ authorisedScopes: ['read:loans'] });
    try {
      const provider = providerFor(local);
      const error = await provider
        .getToken({ scopes: ['read:loans', 'create:repayment'] })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ScopeNotGrantedError);
      expect(error).toMatchObject({
        code: 'ERR_SCOPE_NOT_GRANTED',
        missingScopes: ['create:repayment'],
        grantedScopes: ['read:loans'],
      });
      expect((error as Error).message).toBe(
        'the token server did not grant "create:repayment" (granted: read:loans); ask the partner administration console to authorise this scope for the client, or do not call operations that need it.',
      );
      // The answer is cached: asking again raises again without a new request.
      await expect(provider.getToken({ scopes: ['create:repayment', 'read:loans'] })).rejects.toBeInstanceOf(
        ScopeNotGrantedError,
      );
      expect(local.tokenRequests()).toBe(1);
    } finally {
      await local.close();
    }
  });
});

describe('invalidate', () => {
  it('drops the given token only when it is still the cached one', async () => {
    const events: TokenEvent[] = [];
    const provider = providerFor(server, { onEvent: (e) => events.push(e) });
    const first = await provider.getToken();
    await provider.invalidate('not-the-token');
    expect((await provider.getToken()).accessToken).toBe(first.accessToken);
    await provider.invalidate(first);
    const second = await provider.getToken();
    expect(second.accessToken).not.toBe(first.accessToken);
    expect(count()).toBe(2);
    expect(events.filter((e) => e.type === 'invalidated')).toEqual([
      { type: 'invalidated', scopes: [], token: `…${first.accessToken.slice(-6)}` },
    ]);
  });

  it('drops every cached token of the provider when called without a token', async () => {
    const provider = providerFor(server);
    await provider.getToken({ scopes: ['read:loans'] });
    await provider.getToken({ scopes: ['create:repayment'] });
    await provider.invalidate();
    await provider.getToken({ scopes: ['read:loans'] });
    await provider.getToken({ scopes: ['create:repayment'] });
    expect(count()).toBe(4);
  });
});

describe('store', () => {
  it('hands the store plain token data with a ttl, never promises, and reads it back', async () => {
    const clock = fakeClock();
    const local = await startTokenServer({ now: clock.now });
    const data = new Map<string, string>();
    const sets: Array<{ key: string; ttlMs: number }> = [];
    // A store that serialises, as a Redis store would.
    const store: TokenStore = {
      get: async (key) => {
        const raw = data.get(key);
        return raw === undefined ? undefined : (JSON.parse(raw) as StoredToken);
      },
      set: async (key, value, ttlMs) => {
        for (const field of Object.values(value)) expect(field).not.toBeInstanceOf(Promise);
        data.set(key, JSON.stringify(value));
        sets.push({ key, ttlMs });
      },
      delete: async (key) => {
        data.delete(key);
      },
    };
    try {
      const a = providerFor(local, { clock, store });
      const token = await a.getToken();
      expect(sets).toHaveLength(1);
      expect(sets[0]?.ttlMs).toBe(token.expiresAt - clock.now());
      expect(sets[0]?.key).not.toContain('client-4f1c9a');
      const stored = JSON.parse(data.get(sets[0]?.key ?? '') ?? '{}');
      expect(stored).toEqual({
        accessToken: token.accessToken,
        tokenType: 'Bearer',
        expiresAt: token.expiresAt,
        obtainedAt: clock.now(),
        grantedScopes: token.grantedScopes,
        partnerId: 'partner-123',
        issuer: local.issuer,
        jti: token.jti,
      });
      // A second provider (another replica) on the same store gets the token without a request.
      expect((await providerFor(local, { clock, store }).getToken()).accessToken).toBe(token.accessToken);
      expect(local.tokenRequests()).toBe(1);
    } finally {
      await local.close();
    }
  });
});

describe('throttling', () => {
  it('after a 429 with Retry-After, fails fast for that key until it passes', async () => {
    const clock = fakeClock();
    const local = await startTokenServer({ now: clock.now });
    const events: TokenEvent[] = [];
    try {
      const provider = providerFor(local, {
        clock,
        retry: { maxAttempts: 1 },
        onEvent: (e) => events.push(e),
      });
      local.next(() => ({ status: 429, headers: { 'retry-after': '30' }, body: { error: 'slow_down' } }));
      const error = await provider.getToken().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TokenThrottledError);
      expect(error).toMatchObject({ code: 'ERR_TOKEN_THROTTLED', retryAfterMs: 30_000 });
      clock.advance(10_000);
      await expect(provider.getToken()).rejects.toMatchObject({
        code: 'ERR_TOKEN_THROTTLED',
        retryAfterMs: 20_000,
      });
      expect(local.tokenRequests()).toBe(1);
      // Another scope set is another key: not throttled.
      await provider.getToken({ scopes: ['read:loans'] });
      expect(local.tokenRequests()).toBe(2);
      clock.advance(20_001);
      await provider.getToken();
      expect(local.tokenRequests()).toBe(3);
      expect(
        events.filter((e) => e.type === 'throttled').map((e) => (e as { retryAfterMs: number }).retryAfterMs),
      ).toEqual([30_000, 20_000]);
    } finally {
      await local.close();
    }
  });
});

describe('throttling, longer than the caller can wait', () => {
  it('a Retry-After past retry.maxRetryAfterMs fails the first call at once and every call until it passes (at most 1 h)', async () => {
    const clock = fakeClock();
    const local = await startTokenServer({ now: clock.now });
    const waits: number[] = [];
    try {
      const provider = providerFor(local, {
        clock,
        sleep: async (ms) => {
          waits.push(ms);
        },
        retry: { maxRetryAfterMs: 2_000 },
      });
      local.next(() => ({ status: 503, headers: { 'retry-after': '3600' } }));
      await expect(provider.getToken()).rejects.toMatchObject({
        code: 'ERR_TOKEN_THROTTLED',
        retryAfterMs: 3_600_000,
        retryAt: clock.now() + 3_600_000,
      });
      expect(waits).toEqual([]);
      clock.advance(3_599_000);
      await expect(provider.getToken()).rejects.toMatchObject({ retryAfterMs: 1_000 });
      expect(local.tokenRequests()).toBe(1);
      clock.advance(1_001);
      await expect(provider.getToken()).resolves.toMatchObject({ tokenType: 'Bearer' });
      expect(local.tokenRequests()).toBe(2);
      // An absurd Retry-After is honoured for MAX_THROTTLE_MS, then one request is tried again.
      const other = providerFor(local, { clock, retry: { maxRetryAfterMs: 2_000 } });
      local.next(() => ({ status: 429, headers: { 'retry-after': '999999' } }));
      await expect(other.getToken()).rejects.toMatchObject({ retryAfterMs: MAX_THROTTLE_MS });
      clock.advance(MAX_THROTTLE_MS - 1);
      await expect(other.getToken()).rejects.toMatchObject({ retryAfterMs: 1 });
      clock.advance(2);
      await expect(other.getToken()).resolves.toMatchObject({ tokenType: 'Bearer' });
      expect(local.tokenRequests()).toBe(4);
    } finally {
      await local.close();
    }
  });

  it('a Retry-After ending past getToken({ timeoutMs }) fails at once instead of waiting', async () => {
    const waits: number[] = [];
    const provider = providerFor(server, {
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    server.next(() => ({ status: 429, headers: { 'retry-after': '5' } }));
    await expect(provider.getToken({ timeoutMs: 4_000 })).rejects.toMatchObject({
      code: 'ERR_TOKEN_THROTTLED',
      retryAfterMs: 5_000,
    });
    expect(waits).toEqual([]);
    expect(count()).toBe(1);
  });

  it('with real time: 429 Retry-After: 999999 rejects the first call well under 5 s, typed', async () => {
    const provider = createTokenProvider({
      tokenUrl: server.tokenUrl,
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      audience: server.audience,
    });
    server.next(() => ({ status: 429, headers: { 'retry-after': '999999' } }));
    const started = performance.now();
    const error = await provider.getToken().catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(error).toBeInstanceOf(TokenThrottledError);
    // Cached tokens of other keys keep being served meanwhile.
    await provider.getToken({ scopes: ['read:loans'] });
    await expect(provider.getToken({ scopes: ['read:loans'] })).resolves.toMatchObject({
      tokenType: 'Bearer',
    });
    expect(count()).toBe(2);
  });
});

describe('onEvent', () => {
  it('reports requests, receipts, cache hits, retries and invalidations with tokens shortened', async () => {
    const events: TokenEvent[] = [];
    const provider = providerFor(server, { onEvent: (e) => events.push(e) });
    server.next(() => ({ status: 503 }));
    const token = await provider.getToken({ scopes: ['read:loans'] });
    await provider.getToken({ scopes: ['read:loans'] });
    await provider.invalidate(token);
    const short = `…${token.accessToken.slice(-6)}`;
    expect(events).toEqual([
      {
        type: 'token-requested',
        tokenUrl: server.tokenUrl,
        scopes: ['read:loans'],
        attempt: 1,
        background: false,
      },
      {
        type: 'retry-scheduled',
        scopes: ['read:loans'],
        attempt: 1,
        delayMs: 0,
        reason: 'status',
        status: 503,
      },
      {
        type: 'token-requested',
        tokenUrl: server.tokenUrl,
        scopes: ['read:loans'],
        attempt: 2,
        background: false,
      },
      {
        type: 'token-received',
        scopes: ['read:loans'],
        grantedScopes: ['read:loans'],
        token: short,
        expiresAt: token.expiresAt,
        background: false,
      },
      { type: 'cache-hit', scopes: ['read:loans'], token: short, expiresAt: token.expiresAt },
      { type: 'invalidated', scopes: ['read:loans'], token: short },
    ]);
  });

  it('ignores a listener that throws', async () => {
    const provider = providerFor(server, {
      onEvent: () => {
        throw new Error('listener bug');
      },
    });
    await expect(provider.getToken()).resolves.toMatchObject({ tokenType: 'Bearer' });
  });
});

describe('fresh scope decisions', () => {
  it('asks again (once for all callers) for a scope the cached token lacks, at most once per scopeRecheckMs', async () => {
    const clock = fakeClock();
    let authorised = ['read:loans'];
    const local = await startTokenServer({ now: clock.now, ttlSeconds: 3601 });
    local.fallback = async (request, issue) => {
      const asked = (request.form.get('scope') ?? '').split(' ').filter(Boolean);
      const granted = asked.filter((s) => authorised.includes(s));
      return { body: await issue({ claims: { scope: granted }, response: { scope: granted.join(' ') } }) };
    };
    try {
      const provider = providerFor(local, { clock, refresh: { scopeRecheckMs: 60_000 } });
      const wanted = ['create:repayment', 'read:loans'];
      await expect(provider.getToken({ scopes: wanted })).rejects.toBeInstanceOf(ScopeNotGrantedError);
      expect(local.tokenRequests()).toBe(1);
      // Within the interval: the cached decision stands, no request.
      clock.advance(30_000);
      await expect(provider.getToken({ scopes: wanted })).rejects.toBeInstanceOf(ScopeNotGrantedError);
      expect(local.tokenRequests()).toBe(1);
      // The console grants the scope; past the interval, 20 callers share one new request.
      authorised = ['create:repayment', 'read:loans'];
      clock.advance(30_000);
      const tokens = await Promise.all(
        Array.from({ length: 20 }, () => provider.getToken({ scopes: wanted })),
      );
      expect(tokens[0]?.grantedScopes).toEqual(wanted);
      expect(local.tokenRequests()).toBe(2);
    } finally {
      await local.close();
    }
  });
});

describe('an outage near expiry', () => {
  it('one looping caller in the hard window gets the still-valid token, and the endpoint one retry sequence per pause', async () => {
    const clock = fakeClock();
    const local = await startTokenServer({ now: clock.now, ttlSeconds: 3601 });
    try {
      const events: TokenEvent[] = [];
      const provider = providerFor(local, { clock, onEvent: (e) => events.push(e) });
      const first = await provider.getToken();
      local.fallback = () => ({ status: 503, body: { error: 'temporarily_unavailable' } });
      clock.set(first.expiresAt - 2_000); // inside the hard window, not expired
      for (let i = 0; i < 45; i++) {
        expect((await provider.getToken()).accessToken).toBe(first.accessToken);
        clock.advance(10);
      }
      // One sequence (1 + retry.maxRetries attempts), then callers share its failure during the pause.
      expect(local.tokenRequests()).toBe(1 + 3);
      expect(events.filter((e) => e.type === 'token-request-failed')).toHaveLength(1);
      // Past the expiry there is nothing left to serve: the shared failure is thrown.
      clock.set(first.expiresAt + 1);
      await expect(provider.getToken()).rejects.toMatchObject({ code: 'ERR_TOKEN_REQUEST' });
    } finally {
      await local.close();
    }
  });
});
