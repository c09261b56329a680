import { type Clock, systemClock } from './clock.js';

/**
 * The token data a store keeps: plain, JSON-serialisable fields (a shared Redis store can hold it),
 * never a promise or a provider's in-flight state.
 */
export interface StoredToken {
  accessToken: string;
  tokenType: 'Bearer';
  /** Epoch ms. */
  expiresAt: number;
  /** Epoch ms when the request for this token started (lifetime = expiresAt - obtainedAt). */
  obtainedAt: number;
  grantedScopes: readonly string[];
  partnerId: string;
  issuer: string;
  jti: string;
}

/**
 * Where tokens are cached. Keys are opaque strings built by the provider from (token URL, a hash of
 * the client id, audience, sorted scopes); `ttlMs` is how long the entry is worth keeping.
 */
export interface TokenStore {
  get(key: string): Promise<StoredToken | undefined>;
  set(key: string, value: StoredToken, ttlMs: number): Promise<void>;
  delete(key: string): Promise<void>;
  /**
   * Optional single flight across processes (a shared store such as Redis). When present, the
   * provider calls it on a miss or a refresh instead of requesting a token itself: the store either
   * runs `fetchToken` in this process (it holds the lock), saves the result and tells the waiting
   * processes, or waits for another process's result and returns it. It must settle within
   * `timeoutMs` (the provider's whole request sequence); a rejection makes the provider fall back to
   * its own request, reported through `onEvent`, except a rejection whose error carries a numeric
   * `throttledUntil` (epoch ms): the token endpoint told another process to retry later, and the
   * provider fails fast with TokenThrottledError until then instead of sending a request of its own.
   *
   * Whatever `get` and `singleFlight` return is checked before it is served (alive, for this audience,
   * client, partner and issuer): a store is trusted to be fast, not to be right.
   */
  singleFlight?(
    key: string,
    fetchToken: () => Promise<StoredToken>,
    options: SingleFlightOptions,
  ): Promise<StoredToken>;
}

export interface SingleFlightOptions {
  /** How long the lock may be held and a waiter may wait, in ms. */
  timeoutMs: number;
  /**
   * A token the caller already has and wants replaced (a refresh): a stored token with the same
   * `accessToken` is not an answer, a newer one is.
   */
  replacing?: string;
  signal?: AbortSignal;
}

/** The default store: a Map in this process, entries dropped once their ttl has passed. */
export function createMemoryTokenStore(options: { clock?: Clock } = {}): TokenStore {
  const clock = options.clock ?? systemClock;
  const entries = new Map<string, { value: StoredToken; until: number }>();
  return {
    get(key) {
      const entry = entries.get(key);
      if (entry === undefined) return Promise.resolve(undefined);
      if (entry.until <= clock.now()) {
        entries.delete(key);
        return Promise.resolve(undefined);
      }
      return Promise.resolve(entry.value);
    },
    set(key, value, ttlMs) {
      if (ttlMs > 0) entries.set(key, { value, until: clock.now() + ttlMs });
      else entries.delete(key);
      return Promise.resolve();
    },
    delete(key) {
      entries.delete(key);
      return Promise.resolve();
    },
  };
}
