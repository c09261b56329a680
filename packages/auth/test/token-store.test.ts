import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenRequestError } from '../src/errors.js';
import type { TokenEvent } from '../src/token-event.js';
import {
  createMemoryTokenStore,
  type SingleFlightOptions,
  type StoredToken,
  type TokenStore,
} from '../src/token-store.js';
import { providerFor } from './support/provider.js';
import { fakeClock, startTokenServer, type TokenServer } from './support/token-server.js';

const token: StoredToken = {
  accessToken: 'a.b.c',
  tokenType: 'Bearer',
  expiresAt: 0,
  obtainedAt: 0,
  grantedScopes: ['read:loans'],
  partnerId: 'p',
  issuer: 'i',
  jti: 'j',
};

describe('createMemoryTokenStore', () => {
  it('keeps an entry for its ttl on the given clock', async () => {
    const clock = fakeClock();
    const store = createMemoryTokenStore({ clock });
    await store.set('k', token, 1000);
    expect(await store.get('k')).toBe(token);
    clock.advance(999);
    expect(await store.get('k')).toBe(token);
    clock.advance(1);
    expect(await store.get('k')).toBeUndefined();
  });

  it('deletes, and does not keep entries with a ttl of 0 or less', async () => {
    const store = createMemoryTokenStore();
    await store.set('k', token, 60_000);
    await store.delete('k');
    expect(await store.get('k')).toBeUndefined();
    await store.set('k', token, 0);
    expect(await store.get('k')).toBeUndefined();
  });
});

describe('a shared store, as the provider uses it', () => {
  let server: TokenServer;
  beforeAll(async () => {
    server = await startTokenServer();
  });
  afterAll(() => server.close());

  it('is best-effort: a store whose get/set/delete throw never fails a call nor costs a request', async () => {
    const events: TokenEvent[] = [];
    const broken: TokenStore = {
      get: () => Promise.reject(new Error('store down: connect ECONNREFUSED 127.0.0.1:6379')),
      set: () => Promise.reject(new Error('store down')),
      delete: () => Promise.reject(new Error('store down')),
    };
    const before = server.tokenRequests();
    const provider = providerFor(server, { store: broken, onEvent: (e) => events.push(e) });
    const tokens = await Promise.all(Array.from({ length: 20 }, () => provider.getToken()));
    for (let i = 0; i < 20; i++) await provider.getToken();
    expect(server.tokenRequests() - before).toBe(1);
    expect(new Set(tokens.map((t) => t.accessToken)).size).toBe(1);
    const failed = events.filter((e) => e.type === 'store-failed');
    expect(failed.map((e) => e.type === 'store-failed' && e.operation)).toEqual(
      expect.arrayContaining(['get', 'set']),
    );
    await expect(provider.invalidate()).resolves.toBeUndefined();
    expect(events.some((e) => e.type === 'store-failed' && e.operation === 'delete')).toBe(true);
  });

  it('serves a token another process put in the store without asking the token endpoint', async () => {
    const shared = createMemoryTokenStore();
    const before = server.tokenRequests();
    const first = await providerFor(server, { store: shared }).getToken();
    const second = await providerFor(server, { store: shared }).getToken();
    expect(second.accessToken).toBe(first.accessToken);
    expect(server.tokenRequests() - before).toBe(1);
  });

  /** A test double of a shared store with single flight: one in-process lock per key, like Redis's. */
  const singleFlightStore = (options: { failWith?: Error } = {}) => {
    const inner = createMemoryTokenStore();
    const calls: { key: string; options: SingleFlightOptions }[] = [];
    const locks = new Map<string, Promise<StoredToken>>();
    const store: TokenStore = {
      get: (key) => inner.get(key),
      set: (key, value, ttlMs) => inner.set(key, value, ttlMs),
      delete: (key) => inner.delete(key),
      async singleFlight(key, fetchToken, flightOptions) {
        calls.push({ key, options: flightOptions });
        if (options.failWith) throw options.failWith;
        const held = locks.get(key);
        if (held) return held;
        const promise = (async () => {
          const token = await fetchToken();
          await inner.set(key, token, token.expiresAt - Date.now());
          return token;
        })();
        locks.set(key, promise);
        try {
          return await promise;
        } finally {
          locks.delete(key);
        }
      },
    };
    return { store, calls, inner };
  };

  it('routes a miss through store.singleFlight, with the sequence budget as timeout', async () => {
    const { store, calls, inner } = singleFlightStore();
    const before = server.tokenRequests();
    // Two providers (two processes' worth) on one store: one token request in all.
    const a = providerFor(server, {
      store,
      requestTimeoutMs: 1_000,
      retry: { maxRetries: 1, maxDelayMs: 500, maxRetryAfterMs: 400 },
    });
    const b = providerFor(server, {
      store,
      requestTimeoutMs: 1_000,
      retry: { maxRetries: 1, maxDelayMs: 500, maxRetryAfterMs: 400 },
    });
    const [ta, tb] = await Promise.all([a.getToken(), b.getToken()]);
    expect(tb.accessToken).toBe(ta.accessToken);
    expect(server.tokenRequests() - before).toBe(1);
    expect(calls).toHaveLength(2);
    // requestTimeoutMs × attempts + max(maxDelayMs, maxRetryAfterMs) × retries.
    expect(calls[0]?.options).toEqual({ timeoutMs: 2_500 });
    // The store saved the token itself: the provider did not write it a second time.
    expect((await inner.get(calls[0]!.key))?.accessToken).toBe(ta.accessToken);
  });

  it('names the token being replaced when a refresh goes through singleFlight', async () => {
    const clock = fakeClock();
    const local = await startTokenServer({ now: clock.now, ttlSeconds: 3601 });
    try {
      const { store, calls } = singleFlightStore();
      const provider = providerFor(local, { store, clock });
      const first = await provider.getToken();
      clock.set(first.expiresAt - 1_000); // inside the hard window: the caller waits for a new one
      const next = await provider.getToken();
      expect(next.accessToken).not.toBe(first.accessToken);
      expect(calls.at(-1)?.options.replacing).toBe(first.accessToken);
    } finally {
      await local.close();
    }
  });

  it('falls back to its own request when singleFlight rejects, reports it, and keeps the token in memory', async () => {
    const { store, calls } = singleFlightStore({ failWith: new Error('lock service unavailable') });
    const events: TokenEvent[] = [];
    const before = server.tokenRequests();
    const provider = providerFor(server, { store, onEvent: (e) => events.push(e) });
    const tokens = await Promise.all(Array.from({ length: 10 }, () => provider.getToken()));
    expect(new Set(tokens.map((t) => t.accessToken)).size).toBe(1);
    expect(await provider.getToken()).toBe(tokens[0]);
    expect(calls).toHaveLength(1);
    expect(server.tokenRequests() - before).toBe(1);
    expect(events).toContainEqual({
      type: 'store-failed',
      operation: 'singleFlight',
      message: 'lock service unavailable',
    });
  });

  it('does not send a second request when singleFlight fails after our own request failed', async () => {
    const { store } = singleFlightStore();
    const before = server.tokenRequests();
    server.next(() => ({ status: 401, body: { error: 'invalid_client' } }));
    const error = await providerFor(server, { store, retry: { maxRetries: 0 } })
      .getToken()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenRequestError);
    expect(server.tokenRequests() - before).toBe(1);
  });
});
