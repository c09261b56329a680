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
