import { createHash } from 'node:crypto';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  customFetch,
  type JSONWebKeySet,
  type JWTPayload,
  jwtVerify,
} from 'jose';
import { type AccessToken, toAccessToken } from './access-token.js';
import { type Clock, raceSignal, realSleep, type Sleep, systemClock } from './clock.js';
import { ScopeNotGrantedError, TokenThrottledError } from './errors.js';
import { shortenToken } from './redact.js';
import { defaultRetryPolicy, type RetryPolicy } from './retry.js';
import { missingScopes, normalizeScopes, type ScopeSet } from './scope-set.js';
import { assertSecureUrl, isLoopbackHost, resolveTokenUrl } from './token-endpoint.js';
import type { TokenEvent } from './token-event.js';
import { sendTokenRequest } from './token-request.js';
import { processTokenResponse } from './token-response.js';
import { createMemoryTokenStore, type StoredToken, type TokenStore } from './token-store.js';

/** When to refresh. Every window is measured back from the token's expiry. */
export interface RefreshOptions {
  /** Minimum soft window: inside it, callers get the cached token while one refresh runs in the background. Default 60 000. */
  softWindowMs?: number;
  /** Soft window as a share of the token lifetime, when that is larger than softWindowMs. Default 0.1. */
  softWindowRatio?: number;
  /** Inside this window callers wait for a fresh token instead of getting one about to expire. Default 5 000. */
  hardWindowMs?: number;
  /** The soft window is widened by up to this share, at random per token, so replicas do not refresh together. Default 0.2. */
  jitterRatio?: number;
  /** Allowed difference between this machine's clock and the token server's when checking `exp`. Default 30 000. */
  clockSkewMs?: number;
}

export interface RetryOptions {
  /** Attempts in total for one token request, the first included. Default 3. */
  maxAttempts?: number;
  /** Upper bound of the first retry's random delay; doubles with each retry. Default 200. */
  baseDelayMs?: number;
  /** Cap of the backoff bound, and the pause after a failed background refresh. Default 5 000. */
  maxDelayMs?: number;
  /** Longest Retry-After honoured (and longest fail-fast period after a 429/503). Default 60 000. */
  maxRetryAfterMs?: number;
}

export interface VerifyOptions {
  /** The auth service's JWKS address (fetched with the provider's `fetch`, cached by jose). */
  jwksUrl?: string;
  /** A JWKS given inline instead of jwksUrl. */
  jwks?: { keys: object[] };
  /** Expected `iss` claim, compared exactly (the deployed service's issuer ends with a slash). */
  issuer?: string;
}

export interface TokenProviderOptions {
  /** Address of the auth service; the token endpoint is `{authUrl}/oauth/token`. Exactly one of authUrl / tokenUrl. */
  authUrl?: string;
  /** The full token endpoint address. */
  tokenUrl?: string;
  clientId: string;
  clientSecret: string;
  /** The partner API base URL: the JWT `aud` must contain it. */
  audience: string;
  /** Scopes asked for when getToken() names none. Default: none (the server grants all authorised scopes). */
  scopes?: readonly string[];
  /** How the client authenticates: form fields (default) or HTTP Basic. */
  clientAuth?: 'body' | 'basic';
  fetch?: typeof globalThis.fetch;
  clock?: Clock;
  /** How to wait between retries. Default: setTimeout. */
  sleep?: Sleep;
  /** Random source in [0, 1) for jitter. Default Math.random. */
  random?: () => number;
  refresh?: RefreshOptions;
  retry?: RetryOptions;
  /** Time limit of one token request attempt. Default 10 000. */
  requestTimeoutMs?: number;
  /** Where tokens are cached. Default: in memory, per provider. */
  store?: TokenStore;
  /** Verify the JWT signature (RS256, PS256 or ES256 only) and optionally its issuer. Default: decode only. */
  verify?: VerifyOptions;
  /** Observability hook; tokens shortened to their last 6 characters, no client id or secret. */
  onEvent?: (event: TokenEvent) => void;
  /**
   * Sends the client secret over plain http to a non-loopback host.
   * @deprecated SECURITY WARNING: the client credentials and access tokens travel unencrypted and can be
   * read or replayed by anyone on the network path. Only for throw-away test set-ups; never in production.
   */
  dangerouslyAllowInsecureHttp?: boolean;
}

export interface GetTokenOptions {
  /** Scopes the caller needs. Default: the provider's `scopes` option. */
  scopes?: readonly string[];
  /** Stops waiting (the shared token request goes on for other callers). */
  signal?: AbortSignal;
}

export interface TokenProvider {
  /**
   * A valid token covering `scopes`: from the cache when possible, else from the token endpoint.
   * Throws ScopeNotGrantedError when a needed scope was not granted.
   */
  getToken(options?: GetTokenOptions): Promise<AccessToken>;
  /** Drops the cached token equal to `token`, or every cached token of this provider when none is given. */
  invalidate(token?: AccessToken | string): Promise<void>;
}

/** Algorithms accepted when verifying: asymmetric only, never `none` or a shared-secret HS* algorithm. */
export const ALLOWED_ALGORITHMS = ['RS256', 'PS256', 'ES256'] as const;

function requireString(value: unknown, name: string, what: string): string {
  if (typeof value !== 'string' || value === '') {
    throw new TypeError(`createTokenProvider: ${name} must be a non-empty string (${what}).`);
  }
  return value;
}

function nonNegative(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new TypeError(`createTokenProvider: ${name} must be a finite number ≥ 0, got ${String(value)}.`);
  }
  return value;
}

/** Creates a client-credentials token provider (seed §4.1 and §5). */
export function createTokenProvider(options: TokenProviderOptions): TokenProvider {
  const clientId = requireString(options.clientId, 'clientId', 'from the partner administration console');
  const clientSecret = requireString(
    options.clientSecret,
    'clientSecret',
    'from the partner administration console',
  );
  const audience = requireString(options.audience, 'audience', 'the partner API base URL');
  const clientAuth = options.clientAuth ?? 'body';
  if (clientAuth !== 'body' && clientAuth !== 'basic') {
    throw new TypeError(
      `createTokenProvider: clientAuth must be 'body' or 'basic', got ${JSON.stringify(clientAuth)}.`,
    );
  }
  const allowInsecure = options.dangerouslyAllowInsecureHttp === true;
  const tokenUrl = resolveTokenUrl(options);
  assertSecureUrl(tokenUrl, 'the token endpoint', allowInsecure);
  if (tokenUrl.protocol === 'http:' && !isLoopbackHost(tokenUrl.hostname)) {
    globalThis.process?.emitWarning?.(
      'dangerouslyAllowInsecureHttp is set: client credentials and access tokens are sent over plain http.',
      { code: 'PARTNER_AUTH_INSECURE_HTTP' },
    );
  }

  const fetchImpl = options.fetch ?? globalThis.fetch;
  const clock = options.clock ?? systemClock;
  const sleep = options.sleep ?? realSleep;
  const random = options.random ?? Math.random;
  const refresh = options.refresh ?? {};
  const softWindowMs = nonNegative(refresh.softWindowMs, 60_000, 'refresh.softWindowMs');
  const softWindowRatio = nonNegative(refresh.softWindowRatio, 0.1, 'refresh.softWindowRatio');
  const hardWindowMs = nonNegative(refresh.hardWindowMs, 5_000, 'refresh.hardWindowMs');
  const jitterRatio = nonNegative(refresh.jitterRatio, 0.2, 'refresh.jitterRatio');
  const clockSkewMs = nonNegative(refresh.clockSkewMs, 30_000, 'refresh.clockSkewMs');
  const retryOptions = options.retry ?? {};
  const retry: RetryPolicy = {
    maxAttempts: Math.max(
      1,
      nonNegative(retryOptions.maxAttempts, defaultRetryPolicy.maxAttempts, 'retry.maxAttempts'),
    ),
    baseDelayMs: nonNegative(retryOptions.baseDelayMs, defaultRetryPolicy.baseDelayMs, 'retry.baseDelayMs'),
    maxDelayMs: nonNegative(retryOptions.maxDelayMs, defaultRetryPolicy.maxDelayMs, 'retry.maxDelayMs'),
    maxRetryAfterMs: nonNegative(
      retryOptions.maxRetryAfterMs,
      defaultRetryPolicy.maxRetryAfterMs,
      'retry.maxRetryAfterMs',
    ),
  };
  const requestTimeoutMs = nonNegative(options.requestTimeoutMs, 10_000, 'requestTimeoutMs');
  const store = options.store ?? createMemoryTokenStore({ clock });
  const defaultScopes = normalizeScopes(options.scopes ?? []);
  const onEvent = options.onEvent;
  const emit = (event: TokenEvent): void => {
    if (!onEvent) return;
    try {
      onEvent(event);
    } catch {
      // an observer must not break token handling
    }
  };

  let verifyJwt: ((jwt: string) => Promise<JWTPayload>) | undefined;
  if (options.verify) {
    const { jwks, jwksUrl, issuer } = options.verify;
    if ((jwks === undefined) === (jwksUrl === undefined)) {
      throw new TypeError(
        'createTokenProvider: verify needs exactly one of jwksUrl (the JWKS address) or jwks (the key set).',
      );
    }
    let keySet: ReturnType<typeof createLocalJWKSet> | ReturnType<typeof createRemoteJWKSet>;
    if (jwksUrl !== undefined) {
      let url: URL;
      try {
        url = new URL(jwksUrl);
      } catch (cause) {
        throw new TypeError(
          `createTokenProvider: verify.jwksUrl ${JSON.stringify(jwksUrl)} is not an absolute URL.`,
          { cause },
        );
      }
      assertSecureUrl(url, 'verify.jwksUrl', allowInsecure);
      keySet = createRemoteJWKSet(url, { [customFetch]: fetchImpl });
    } else {
      keySet = createLocalJWKSet(jwks as JSONWebKeySet);
    }
    verifyJwt = async (jwt) =>
      (
        await jwtVerify(jwt, keySet, {
          algorithms: [...ALLOWED_ALGORITHMS],
          ...(issuer !== undefined ? { issuer } : {}),
          clockTolerance: Math.ceil(clockSkewMs / 1000),
          currentDate: new Date(clock.now()),
        })
      ).payload;
  }

  // The client id is a credential (seed §2.1): keys carry a hash of it, never the id itself.
  const clientTag = createHash('sha256').update(clientId).digest('hex').slice(0, 16);
  const keyPrefix = `partner-lending-auth:v1|${tokenUrl.href}|${clientTag}|${audience}|`;
  const keys = new Map<string, string>();
  const keyFor = (scopes: ScopeSet): string => {
    const joined = scopes.join(' ');
    let key = keys.get(joined);
    if (key === undefined) {
      key = keyPrefix + joined;
      keys.set(joined, key);
    }
    return key;
  };

  /** Keys this provider has seen in the store, with the scopes they were requested for. */
  const known = new Map<string, ScopeSet>([[keyFor(defaultScopes), defaultScopes]]);
  const inflight = new Map<string, Promise<StoredToken>>();
  const throttledUntil = new Map<string, number>();
  const refreshPlans = new Map<string, { token: string; refreshAt: number }>();
  /**
   * The last token each key's shared request brought, as a fresh object per request: a caller whose
   * store read missed while that request completed (a remote store's read takes a round trip) takes
   * it instead of sending another request. Plain data, dropped by invalidate.
   */
  const completed = new Map<string, { entry: StoredToken }>();
  const views = new WeakMap<StoredToken, AccessToken>();

  const usable = (entry: StoredToken, now: number): boolean => entry.expiresAt - now > hardWindowMs;

  /** When to start refreshing this token: drawn once per token, so the jitter is stable. */
  const refreshAtFor = (key: string, entry: StoredToken): number => {
    const plan = refreshPlans.get(key);
    if (plan !== undefined && plan.token === entry.accessToken) return plan.refreshAt;
    const lifetime = Math.max(0, entry.expiresAt - entry.obtainedAt);
    const base = Math.max(softWindowMs, softWindowRatio * lifetime) * (1 + jitterRatio * random());
    // A window longer than half the lifetime would refresh short-lived tokens on nearly every call.
    const window = Math.min(base, Math.max(lifetime / 2, hardWindowMs));
    const refreshAt = entry.expiresAt - window;
    refreshPlans.set(key, { token: entry.accessToken, refreshAt });
    return refreshAt;
  };

  const view = (entry: StoredToken): AccessToken => {
    let token = views.get(entry);
    if (token === undefined) {
      token = toAccessToken(entry);
      views.set(entry, token);
    }
    return token;
  };

  const finish = (entry: StoredToken, wanted: ScopeSet): AccessToken => {
    const missing = missingScopes(wanted, entry.grantedScopes);
    if (missing.length > 0) throw new ScopeNotGrantedError(missing, entry.grantedScopes);
    return view(entry);
  };

  const fetchShared = (key: string, scopes: ScopeSet, background: boolean): Promise<StoredToken> => {
    const existing = inflight.get(key);
    if (existing) return existing;
    const until = throttledUntil.get(key);
    if (until !== undefined) {
      const left = until - clock.now();
      if (left > 0) {
        emit({ type: 'throttled', scopes, retryAfterMs: left });
        return Promise.reject(
          new TokenThrottledError(
            `token requests for scopes "${scopes.join(' ')}" are paused for another ${Math.ceil(left / 1000)} s because the token endpoint asked to retry later (429/503 Retry-After); retry after that.`,
            left,
          ),
        );
      }
      throttledUntil.delete(key);
    }
    const promise = (async () => {
      try {
        const { response, requestedAt } = await sendTokenRequest(
          { tokenUrl, clientId, clientSecret, audience, scopes, clientAuth },
          {
            fetch: fetchImpl,
            clock,
            sleep,
            random,
            retry,
            requestTimeoutMs,
            background,
            emit,
            onThrottle: (until) => throttledUntil.set(key, until),
          },
        );
        const stored = await processTokenResponse(response, {
          requestedAt,
          now: clock.now(),
          audience,
          requestedScopes: scopes,
          clockSkewMs,
          verifyJwt,
        });
        await store.set(key, stored, stored.expiresAt - clock.now());
        completed.set(key, { entry: stored });
        known.set(key, scopes);
        throttledUntil.delete(key);
        emit({
          type: 'token-received',
          scopes,
          grantedScopes: stored.grantedScopes,
          token: shortenToken(stored.accessToken),
          expiresAt: stored.expiresAt,
          background,
        });
        return stored;
      } catch (error) {
        emit({
          type: 'token-request-failed',
          scopes,
          code: (error as { code?: string }).code ?? 'ERR_UNKNOWN',
          message: error instanceof Error ? error.message : String(error),
          background,
        });
        throw error;
      } finally {
        inflight.delete(key);
      }
    })();
    inflight.set(key, promise);
    return promise;
  };

  const lookup = async (
    key: string,
    wanted: ScopeSet,
    now: number,
  ): Promise<{ key: string; entry: StoredToken; scopes: ScopeSet } | undefined> => {
    const entry = await store.get(key);
    let exact: { key: string; entry: StoredToken; scopes: ScopeSet } | undefined;
    if (entry !== undefined) {
      if (!known.has(key)) known.set(key, wanted);
      if (usable(entry, now)) {
        exact = { key, entry, scopes: wanted };
        if (missingScopes(wanted, entry.grantedScopes).length === 0) return exact;
      }
    }
    if (wanted.length === 0) return exact;
    // A token granted a superset of the wanted scopes serves this narrower request as well.
    for (const [otherKey, otherScopes] of known) {
      if (otherKey === key) continue;
      if (otherScopes.length > 0 && missingScopes(wanted, otherScopes).length > 0) continue;
      const other = await store.get(otherKey);
      if (other && usable(other, now) && missingScopes(wanted, other.grantedScopes).length === 0) {
        return { key: otherKey, entry: other, scopes: otherScopes };
      }
    }
    // The exact entry lacks a wanted scope: the caller gets ScopeNotGrantedError without a new request.
    return exact;
  };

  return {
    async getToken(getOptions = {}) {
      const wanted = getOptions.scopes === undefined ? defaultScopes : normalizeScopes(getOptions.scopes);
      getOptions.signal?.throwIfAborted();
      const key = keyFor(wanted);
      const now = clock.now();
      const before = completed.get(key);
      const hit = await lookup(key, wanted, now);
      if (hit !== undefined) {
        const { entry } = hit;
        if (now >= refreshAtFor(hit.key, entry) && !inflight.has(hit.key)) {
          const until = throttledUntil.get(hit.key);
          if (until === undefined || until <= now) {
            emit({
              type: 'background-refresh',
              scopes: hit.scopes,
              token: shortenToken(entry.accessToken),
              expiresAt: entry.expiresAt,
            });
            // Failures are reported through onEvent; callers keep the current token meanwhile. The
            // next background attempt waits retry.maxDelayMs, so a failing endpoint does not get one
            // request per getToken call (the hard window still makes callers wait near expiry).
            fetchShared(hit.key, hit.scopes, true).catch(() => {
              const plan = refreshPlans.get(hit.key);
              if (plan?.token === entry.accessToken) plan.refreshAt = clock.now() + retry.maxDelayMs;
            });
          }
        }
        emit({
          type: 'cache-hit',
          scopes: wanted,
          token: shortenToken(entry.accessToken),
          expiresAt: entry.expiresAt,
        });
        return finish(entry, wanted);
      }
      const latest = completed.get(key);
      if (latest !== undefined && latest !== before && usable(latest.entry, clock.now())) {
        return finish(latest.entry, wanted);
      }
      const stored = await raceSignal(fetchShared(key, wanted, false), getOptions.signal);
      return finish(stored, wanted);
    },

    async invalidate(token) {
      const target = typeof token === 'string' ? token : token?.accessToken;
      for (const [key, scopes] of known) {
        const entry = await store.get(key);
        if (entry === undefined || (target !== undefined && entry.accessToken !== target)) continue;
        await store.delete(key);
        refreshPlans.delete(key);
        completed.delete(key);
        emit({ type: 'invalidated', scopes, token: shortenToken(entry.accessToken) });
      }
    },
  };
}
