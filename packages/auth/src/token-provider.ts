import type { JSONWebKeySet, JWTPayload } from 'jose';
import { type AccessToken, toAccessToken } from './access-token.js';
import { type Clock, raceSignal, realSleep, type Sleep, systemClock } from './clock.js';
import { createStderrLogger, logLevelFromEnv, logTokenEvent } from './env-logger.js';
import { PartnerAuthError, ScopeNotGrantedError, TokenThrottledError } from './errors.js';
import { redactTokens, shortenToken } from './redact.js';
import { defaultRetryPolicy, type RetryOptions, type RetryPolicy, resolveRetryPolicy } from './retry.js';
import { missingScopes, normalizeScopes, type ScopeSet } from './scope-set.js';
import { assertSecureUrl, isLoopbackHost, resolveTokenUrl } from './token-endpoint.js';
import type { TokenEvent } from './token-event.js';
import { sendTokenRequest } from './token-request.js';
import { processTokenResponse } from './token-response.js';
import type { StoredToken, TokenStore } from './token-store.js';

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
  /**
   * A cached token that lacks a scope a caller wants is asked for again (one request for all
   * callers) at most once per this interval before ScopeNotGrantedError, so a scope granted in the
   * partner administration console is picked up without a restart. Default 60 000.
   */
  scopeRecheckMs?: number;
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
  /**
   * A shared cache in front of the token endpoint (e.g. Redis, for a fleet). Best-effort: a store that
   * fails is reported through `onEvent` and the provider keeps serving tokens from its own memory.
   * Default: none (the provider's own memory only).
   */
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

/** Creates a client-credentials token provider (Partner Lending API — Authentication and Access §4.1 and §5). */
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
  const scopeRecheckMs = nonNegative(refresh.scopeRecheckMs, 60_000, 'refresh.scopeRecheckMs');
  const retry: RetryPolicy = resolveRetryPolicy(
    options.retry,
    defaultRetryPolicy,
    'createTokenProvider: retry',
  );
  const requestTimeoutMs = nonNegative(options.requestTimeoutMs, 10_000, 'requestTimeoutMs');
  const store = options.store;
  const defaultScopes = normalizeScopes(options.scopes ?? []);
  // PARTNER_LOG=debug|info|warn logs token events to stderr when no onEvent observer is given.
  const envLevel = logLevelFromEnv(globalThis.process?.env?.PARTNER_LOG);
  const envLogger =
    envLevel && !options.onEvent ? createStderrLogger(envLevel, [clientId, clientSecret]) : undefined;
  const onEvent = options.onEvent ?? (envLogger && ((event: TokenEvent) => logTokenEvent(envLogger, event)));
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
    // jose is loaded on the first verification, not when the package is imported (most of the
    // cold-import time was jose's module graph).
    let makeKeySet: (jose: typeof import('jose')) => Parameters<typeof import('jose').jwtVerify>[1];
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
      makeKeySet = (jose) => jose.createRemoteJWKSet(url, { [jose.customFetch]: fetchImpl });
    } else {
      if (!Array.isArray((jwks as { keys?: unknown }).keys)) {
        throw new TypeError('createTokenProvider: verify.jwks must be a JWKS object: { keys: [...] }.');
      }
      makeKeySet = (jose) => jose.createLocalJWKSet(jwks as JSONWebKeySet);
    }
    let keySet: ReturnType<typeof makeKeySet> | undefined;
    verifyJwt = async (jwt) => {
      const jose = await import('jose');
      keySet ??= makeKeySet(jose);
      return (
        await jose.jwtVerify(jwt, keySet as never, {
          algorithms: [...ALLOWED_ALGORITHMS],
          ...(issuer !== undefined ? { issuer } : {}),
          clockTolerance: Math.ceil(clockSkewMs / 1000),
          currentDate: new Date(clock.now()),
        })
      ).payload;
    };
  }

  // The client id is a credential (API documentation §2.1): keys carry a hash of it, never the id itself.
  // Web Crypto (globalThis.crypto) is in Node ≥ 20 and every edge and worker runtime: no Node built-in.
  let keyPrefix = '';
  let preparing: Promise<void> | undefined;
  const prepare = (): Promise<void> =>
    (preparing ??= globalThis.crypto.subtle
      .digest('SHA-256', new TextEncoder().encode(clientId))
      .then((digest) => {
        const clientTag = [...new Uint8Array(digest).slice(0, 8)]
          .map((byte) => byte.toString(16).padStart(2, '0'))
          .join('');
        keyPrefix = `partner-lending-auth:v1|${tokenUrl.href}|${clientTag}|${audience}|`;
      }));
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

  /** Keys this provider has seen, with the scopes they were requested for. */
  const known = new Map<string, ScopeSet>();
  /** Normalised scopes and key per scopes array the caller passes (the SDK passes the same arrays). */
  const resolved = new WeakMap<readonly string[], { key: string; wanted: ScopeSet }>();
  /** The same for one-scope arrays built per call (`{ scopes: ['read:loans'] }`), by the scope. */
  const single = new Map<string, { key: string; wanted: ScopeSet }>();
  let defaultResolved: { key: string; wanted: ScopeSet } | undefined;
  const resolve = (scopes: readonly string[] | undefined): { key: string; wanted: ScopeSet } => {
    if (scopes === undefined) {
      defaultResolved ??= { key: keyFor(defaultScopes), wanted: defaultScopes };
      return defaultResolved;
    }
    let hit = resolved.get(scopes) ?? (scopes.length === 1 ? single.get(scopes[0] as string) : undefined);
    if (hit === undefined) {
      const wanted = normalizeScopes(scopes);
      hit = { key: keyFor(wanted), wanted };
      if (Object.isFrozen(scopes)) resolved.set(scopes, hit);
      else if (scopes.length === 1 && single.size < 64) single.set(scopes[0] as string, hit);
    }
    return hit;
  };

  /** A token this provider holds, with its refresh plan drawn once (so the jitter is stable). */
  interface Held {
    entry: StoredToken;
    scopes: ScopeSet;
    /** Epoch ms: from here on one background refresh runs while callers keep this token. */
    refreshAt: number;
    /** Epoch ms: from here on callers wait for a fresh token. */
    hardAt: number;
    /** The token covers every scope its key names. */
    covers: boolean;
    view: AccessToken;
  }
  /** The provider's own memory: tokens are served from here even when a shared store fails. */
  const memory = new Map<string, Held>();
  const inflight = new Map<string, Promise<Held>>();
  const throttledUntil = new Map<string, number>();
  /** After a failed request sequence, the next one for the key waits: one shared retry schedule. */
  const paused = new Map<string, { until: number; error: unknown; failures: number }>();
  /** When each key last got an answer from the token endpoint (for scopeRecheckMs). */
  const askedAt = new Map<string, number>();

  const hold = (key: string, entry: StoredToken, scopes: ScopeSet): Held => {
    const current = memory.get(key);
    if (current !== undefined && current.entry.accessToken === entry.accessToken) return current;
    const lifetime = Math.max(0, entry.expiresAt - entry.obtainedAt);
    // Windows scale with the lifetime: a 2-s token gets a 0.1-s hard window and is refreshed in the
    // background at about 88 % of its life, so it is asked for about once per lifetime.
    const hard = Math.min(hardWindowMs, HARD_SHARE * lifetime);
    const base = Math.max(softWindowMs, softWindowRatio * lifetime) * (1 + jitterRatio * random());
    const cap = SOFT_SHARE * lifetime;
    const soft = base <= cap ? base : cap * (1 - (jitterRatio / 2) * random());
    const held: Held = {
      entry,
      scopes,
      refreshAt: entry.expiresAt - Math.max(soft, hard),
      hardAt: entry.expiresAt - hard,
      covers: missingScopes(scopes, entry.grantedScopes).length === 0,
      view: toAccessToken(entry),
    };
    memory.set(key, held);
    known.set(key, scopes);
    return held;
  };

  const storeFailed = (operation: 'get' | 'set' | 'delete' | 'singleFlight', error: unknown): void => {
    emit({
      type: 'store-failed',
      operation,
      message: redactTokens(error instanceof Error ? error.message : String(error)).slice(0, 300),
    });
  };

  const storeGet = async (key: string): Promise<StoredToken | undefined> => {
    if (store === undefined) return undefined;
    try {
      const entry = await store.get(key);
      return isStoredToken(entry) ? entry : undefined;
    } catch (error) {
      storeFailed('get', error);
      return undefined;
    }
  };

  const storeSet = async (key: string, entry: StoredToken): Promise<void> => {
    if (store === undefined) return;
    try {
      await store.set(key, entry, entry.expiresAt - clock.now());
    } catch (error) {
      storeFailed('set', error);
    }
  };

  /** Sends the token request (with its retries) and validates the answer. */
  const request = (scopes: ScopeSet, background: boolean, key: string): Promise<StoredToken> =>
    sendTokenRequest(
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
        process: (response, requestedAt) =>
          processTokenResponse(response, {
            requestedAt,
            now: clock.now(),
            audience,
            requestedScopes: scopes,
            clockSkewMs,
            verifyJwt,
          }),
      },
    );

  /** Time a whole request sequence may take: every attempt and the backoff between them. */
  const sequenceBudgetMs = requestTimeoutMs * (retry.maxRetries + 1) + retry.maxDelayMs * retry.maxRetries;

  /** Gets a token from the endpoint, through the shared store's single flight when it has one. */
  const obtain = async (
    key: string,
    scopes: ScopeSet,
    background: boolean,
    replacing: string | undefined,
  ): Promise<StoredToken> => {
    if (store?.singleFlight === undefined) {
      const entry = await request(scopes, background, key);
      await storeSet(key, entry);
      return entry;
    }
    // Whatever our own request did is kept apart from what the store did, so that a store failure
    // never costs a second request nor throws away a token just received.
    let own: { ok: true; entry: StoredToken } | { ok: false; error: unknown } | undefined;
    const fetchToken = async () => {
      try {
        const entry = await request(scopes, background, key);
        own = { ok: true, entry };
        return entry;
      } catch (error) {
        own = { ok: false, error };
        throw error;
      }
    };
    try {
      const entry = await store.singleFlight(key, fetchToken, {
        timeoutMs: sequenceBudgetMs,
        ...(replacing === undefined ? {} : { replacing }),
      });
      if (!isStoredToken(entry))
        throw new TypeError('singleFlight resolved with something that is not a token');
      if (replacing !== undefined && entry.accessToken === replacing) {
        throw new TypeError('singleFlight resolved with the token being replaced');
      }
      return entry;
    } catch (error) {
      const ownResult = own as typeof own;
      if (ownResult?.ok === false && (error === ownResult.error || error instanceof PartnerAuthError)) {
        throw error;
      }
      storeFailed('singleFlight', error);
      if (ownResult?.ok === true) return ownResult.entry;
      return request(scopes, background, key);
    }
  };

  const fetchShared = (
    key: string,
    scopes: ScopeSet,
    background: boolean,
    replacing?: string,
  ): Promise<Held> => {
    const existing = inflight.get(key);
    if (existing) return existing;
    const now = clock.now();
    const until = throttledUntil.get(key);
    if (until !== undefined) {
      const left = until - now;
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
    const pause = paused.get(key);
    if (pause !== undefined && pause.until > now) return Promise.reject(pause.error);
    const promise = (async () => {
      try {
        // Another process may already have put a newer token in the shared store.
        if (store !== undefined && replacing !== undefined) {
          const newer = await storeGet(key);
          if (newer !== undefined && newer.accessToken !== replacing) {
            const held = hold(key, newer, scopes);
            if (clock.now() < held.refreshAt) return held;
          }
        }
        const entry = await obtain(key, scopes, background, replacing);
        askedAt.set(key, clock.now());
        paused.delete(key);
        throttledUntil.delete(key);
        const held = hold(key, entry, scopes);
        emit({
          type: 'token-received',
          scopes,
          grantedScopes: entry.grantedScopes,
          token: shortenToken(entry.accessToken),
          expiresAt: entry.expiresAt,
          background,
        });
        return held;
      } catch (error) {
        const failures = (paused.get(key)?.failures ?? 0) + 1;
        // A failed refresh (background, or of a token still held) pauses for retry.maxDelayMs: callers
        // keep the token meanwhile. A failed wait for a first token pauses for the backoff bound of its
        // failure count. Callers within the pause share the failure instead of starting a sequence.
        const pauseMs =
          background || replacing !== undefined
            ? retry.maxDelayMs
            : Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (failures - 1));
        paused.set(key, { until: clock.now() + pauseMs, error, failures });
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

  const refreshInBackground = (key: string, held: Held, now: number): void => {
    if (inflight.has(key)) return;
    const until = throttledUntil.get(key);
    if (until !== undefined && until > now) return;
    const pause = paused.get(key);
    if (pause !== undefined && pause.until > now) return;
    emit({
      type: 'background-refresh',
      scopes: held.scopes,
      token: shortenToken(held.entry.accessToken),
      expiresAt: held.entry.expiresAt,
    });
    // Failures are reported through onEvent; callers keep the current token meanwhile.
    fetchShared(key, held.scopes, true, held.entry.accessToken).catch(() => {});
  };

  /** A held token for `wanted`: the exact key (memory, then store), else a broader one that covers it. */
  const lookup = async (key: string, wanted: ScopeSet, now: number): Promise<Held | undefined> => {
    let exact = memory.get(key);
    if (exact === undefined || now >= exact.hardAt) {
      const stored = await storeGet(key);
      if (stored !== undefined && stored.expiresAt - now > 0) {
        const candidate = hold(key, stored, wanted);
        if (exact === undefined || candidate.entry.expiresAt > exact.entry.expiresAt) exact = candidate;
      }
    }
    if (exact !== undefined && now < exact.hardAt && exact.covers) return exact;
    if (wanted.length > 0) {
      // A token granted a superset of the wanted scopes serves this narrower request as well.
      for (const [otherKey, other] of memory) {
        if (otherKey === key || now >= other.hardAt) continue;
        if (missingScopes(wanted, other.entry.grantedScopes).length === 0) return other;
      }
    }
    return exact;
  };

  const serve = (held: Held): AccessToken => {
    if (onEvent) {
      emit({
        type: 'cache-hit',
        scopes: held.scopes,
        token: shortenToken(held.entry.accessToken),
        expiresAt: held.entry.expiresAt,
      });
    }
    return held.view;
  };

  const notGranted = (wanted: ScopeSet, entry: StoredToken): ScopeNotGrantedError =>
    new ScopeNotGrantedError(missingScopes(wanted, entry.grantedScopes), entry.grantedScopes);

  const slowPath = async (key: string, wanted: ScopeSet, signal: AbortSignal | undefined) => {
    const now = clock.now();
    const held = await lookup(key, wanted, now);
    if (held !== undefined && now < held.hardAt) {
      if (missingScopes(wanted, held.entry.grantedScopes).length === 0) {
        if (now >= held.refreshAt) refreshInBackground(keyFor(held.scopes), held, now);
        return serve(held);
      }
      // A decision made once is asked again (at most once per scopeRecheckMs): the console may have
      // granted the scope since.
      const last = askedAt.get(key);
      if (last !== undefined && now - last < scopeRecheckMs) throw notGranted(wanted, held.entry);
      const fresh = await raceSignal(fetchShared(key, wanted, false, held.entry.accessToken), signal);
      if (missingScopes(wanted, fresh.entry.grantedScopes).length > 0) throw notGranted(wanted, fresh.entry);
      return fresh.view;
    }
    // While a (remote) store read was pending, another caller's request may have completed.
    const latest = memory.get(key);
    if (latest !== undefined && latest !== held && latest.covers && clock.now() < latest.hardAt) {
      return serve(latest);
    }
    let fresh: Held;
    try {
      fresh = await raceSignal(fetchShared(key, wanted, false, held?.entry.accessToken), signal);
    } catch (error) {
      // The endpoint is failing: a token that has not expired yet is still better than no token.
      if (
        !signal?.aborted &&
        held !== undefined &&
        held.entry.expiresAt > clock.now() &&
        missingScopes(wanted, held.entry.grantedScopes).length === 0
      ) {
        return serve(held);
      }
      throw error;
    }
    if (missingScopes(wanted, fresh.entry.grantedScopes).length > 0) throw notGranted(wanted, fresh.entry);
    return fresh.view;
  };

  const self: TokenProvider = {
    getToken(getOptions = {}) {
      const { signal } = getOptions;
      if (signal?.aborted) return Promise.reject(signal.reason);
      if (keyPrefix === '') return prepare().then(() => self.getToken(getOptions));
      let key: string;
      let wanted: ScopeSet;
      try {
        ({ key, wanted } = resolve(getOptions.scopes));
      } catch (error) {
        return Promise.reject(error);
      }
      // The warm path: no await, no allocation beyond the event.
      const held = memory.get(key);
      if (held?.covers) {
        const now = clock.now();
        if (now < held.refreshAt) return Promise.resolve(serve(held));
      }
      return slowPath(key, wanted, signal);
    },

    async invalidate(token) {
      await prepare();
      const target = typeof token === 'string' ? token : token?.accessToken;
      for (const [key, scopes] of known) {
        const held = memory.get(key);
        const stored = held === undefined ? await storeGet(key) : held.entry;
        if (stored === undefined || (target !== undefined && stored.accessToken !== target)) continue;
        memory.delete(key);
        if (store !== undefined) {
          try {
            await store.delete(key);
          } catch (error) {
            storeFailed('delete', error);
          }
        }
        emit({ type: 'invalidated', scopes, token: shortenToken(stored.accessToken) });
      }
    },
  };
  return self;
}

/** The hard window is at most this share of a token's lifetime. */
const HARD_SHARE = 0.05;
/** The soft window is at most this share of a token's lifetime: a short token is refreshed about once. */
const SOFT_SHARE = 0.12;

/** What a shared store hands back is checked before it is served: another process wrote it. */
function isStoredToken(value: unknown): value is StoredToken {
  if (typeof value !== 'object' || value === null) return false;
  const entry = value as Record<string, unknown>;
  return (
    typeof entry.accessToken === 'string' &&
    entry.accessToken !== '' &&
    typeof entry.expiresAt === 'number' &&
    typeof entry.obtainedAt === 'number' &&
    Array.isArray(entry.grantedScopes) &&
    typeof entry.partnerId === 'string'
  );
}
