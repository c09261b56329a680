import type { JSONWebKeySet, JWTPayload } from 'jose';
import { type AccessToken, toAccessToken } from './access-token.js';
import { type Clock, raceSignal, realSleep, type Sleep, startDeadline, systemClock } from './clock.js';
import { createStderrLogger, logLevelFromEnv, logTokenEvent } from './env-logger.js';
import {
  PartnerAuthError,
  ScopeNotGrantedError,
  TokenAbortedError,
  TokenResponseError,
  TokenThrottledError,
  TokenTimeoutError,
} from './errors.js';
import { redactTokens, shortenToken } from './redact.js';
import { defaultRetryPolicy, type RetryOptions, type RetryPolicy, resolveRetryPolicy } from './retry.js';
import { missingScopes, normalizeScopes, type ScopeSet } from './scope-set.js';
import { checkStoredEntry, FOREIGN_ENTRY, type StoredEntryProblem } from './stored-entry.js';
import { assertSecureUrl, isLoopbackHost, resolveTokenUrl } from './token-endpoint.js';
import type { TokenEvent } from './token-event.js';
import { MAX_THROTTLE_MS, sendTokenRequest } from './token-request.js';
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
  /**
   * Stops waiting (the shared token request goes on for other callers): rejects with
   * TokenAbortedError, or TokenTimeoutError when the reason is a `TimeoutError` (`AbortSignal.timeout()`).
   */
  signal?: AbortSignal;
  /**
   * The longest this caller waits, in ms: rejects with TokenTimeoutError after it, and a token endpoint
   * asking to retry later than that (Retry-After) fails the call at once with TokenThrottledError
   * instead of waiting. Default: no limit of the caller's own (each token request attempt is still
   * bounded by `requestTimeoutMs`, and the whole sequence by the retry policy).
   */
  timeoutMs?: number;
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
    /** The cache key it is held under. */
    key: string;
    entry: StoredToken;
    scopes: ScopeSet;
    /** Epoch ms: from here on one background refresh runs while callers keep this token. */
    refreshAt: number;
    /** Epoch ms: from here on callers wait for a fresh token. */
    hardAt: number;
    /** The token covers every scope its key names. */
    covers: boolean;
    /** Epoch ms before which its replacement is not asked for (whole-second alignment), or 0. */
    renewAt: number;
    view: AccessToken;
  }
  /** The provider's own memory: tokens are served from here even when a shared store fails. */
  const memory = new Map<string, Held>();
  /** Narrower keys served by a broader token held under another key (the scoped fast path). */
  const covering = new Map<string, Held>();
  const inflight = new Map<string, Promise<Held>>();
  const throttledUntil = new Map<string, number>();
  /** After a failed request sequence, the next one for the key waits: one shared retry schedule. */
  const paused = new Map<string, { until: number; error: unknown; failures: number }>();
  /** When each key last got an answer from the token endpoint (for scopeRecheckMs). */
  const askedAt = new Map<string, number>();
  /** The partner id of the tokens this provider got from the endpoint itself: stored ones must match. */
  let ownPartnerId: string | undefined;
  const expectedIssuer = options.verify?.issuer;

  const hold = (key: string, entry: StoredToken, scopes: ScopeSet): Held => {
    const current = memory.get(key);
    if (current !== undefined && current.entry.accessToken === entry.accessToken) return current;
    const lifetime = Math.max(0, entry.expiresAt - entry.obtainedAt);
    // Windows scale with the lifetime: a 2-s token gets a 0.1-s hard window and is refreshed in the
    // background at about 88 % of its life, so it is asked for about once per lifetime.
    const hard = Math.min(hardWindowMs, HARD_SHARE * lifetime);
    // A server that counts exp from the start of the current second (exp = floor(now) + expires_in, as
    // most do) gives a token asked for before this one's exp only one second more than this one: for a
    // short token that doubles the requests. Such a token is renewed at its exp instead, callers waiting
    // through its hard window (the request's latency plus at most 5 % of the lifetime).
    const aligned =
      entry.expiresAt % 1000 === 0 && Math.ceil(lifetime / 1000) * 1000 <= ALIGN_MAX_LIFETIME_MS;
    let soft = 0;
    if (!aligned) {
      const base = Math.max(softWindowMs, softWindowRatio * lifetime) * (1 + jitterRatio * random());
      const cap = SOFT_SHARE * lifetime;
      soft = base <= cap ? base : cap * (1 - (jitterRatio / 2) * random());
    }
    const held: Held = {
      key,
      entry,
      scopes,
      refreshAt: entry.expiresAt - Math.max(soft, hard),
      hardAt: entry.expiresAt - hard,
      covers: missingScopes(scopes, entry.grantedScopes).length === 0,
      renewAt: aligned ? entry.expiresAt : 0,
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

  /**
   * What a store handed back, checked as a token-endpoint answer is: another process (or whoever can
   * write to the store) put it there. Served only when it is alive and for this audience, client,
   * partner and issuer (and verifies, with `verify`); otherwise a miss, reported, and an entry that
   * can never be right under this key is deleted.
   */
  const admit = async (key: string, scopes: ScopeSet, value: unknown): Promise<StoredToken | undefined> => {
    if (value === undefined || value === null) return undefined;
    // Loaded on the first token, not at import (see above); the provider has it by now.
    const { decodeJwt } = await import('jose');
    const checked = checkStoredEntry(
      value,
      { now: clock.now(), audience, clientId, partnerId: ownPartnerId, issuer: expectedIssuer },
      decodeJwt,
    );
    let problem: StoredEntryProblem | undefined = 'problem' in checked ? checked.problem : undefined;
    if (problem === undefined && verifyJwt !== undefined) {
      try {
        await verifyJwt((value as StoredToken).accessToken);
      } catch {
        problem = 'signature';
      }
    }
    if (problem === undefined) return (checked as { entry: StoredToken }).entry;
    const token = (value as { accessToken?: unknown }).accessToken;
    emit({
      type: 'store-entry-rejected',
      scopes,
      reason: problem,
      ...(typeof token === 'string' ? { token: shortenToken(token) } : {}),
    });
    if (store !== undefined && FOREIGN_ENTRY.has(problem)) {
      store.delete(key).catch((error: unknown) => storeFailed('delete', error));
    }
    return undefined;
  };

  const storeGet = async (key: string, scopes: ScopeSet): Promise<StoredToken | undefined> => {
    if (store === undefined) return undefined;
    let value: unknown;
    try {
      value = await store.get(key);
    } catch (error) {
      storeFailed('get', error);
      return undefined;
    }
    return admit(key, scopes, value);
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
  const request = async (
    scopes: ScopeSet,
    background: boolean,
    key: string,
    deadlineAt: number | undefined,
  ): Promise<StoredToken> => {
    const entry = await sendTokenRequest(
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
        deadlineAt,
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
    ownPartnerId = entry.partnerId;
    return entry;
  };

  /** Time a whole request sequence may take: every attempt and the waits between them. */
  const sequenceBudgetMs =
    requestTimeoutMs * (retry.maxRetries + 1) +
    Math.max(retry.maxDelayMs, retry.maxRetryAfterMs) * retry.maxRetries;

  const throttled = (scopes: ScopeSet, left: number): TokenThrottledError =>
    new TokenThrottledError(
      `token requests for scopes "${scopes.join(' ')}" are paused for another ${Math.ceil(left / 1000)} s because the token endpoint asked to retry later (429/503 Retry-After); retry after that.`,
      left,
      { now: clock.now() },
    );

  /** Gets a token from the endpoint, through the shared store's single flight when it has one. */
  const obtain = async (
    key: string,
    scopes: ScopeSet,
    background: boolean,
    replacing: string | undefined,
    deadlineAt: number | undefined,
  ): Promise<StoredToken> => {
    if (store?.singleFlight === undefined) {
      const entry = await request(scopes, background, key, deadlineAt);
      await storeSet(key, entry);
      return entry;
    }
    // Whatever our own request did is kept apart from what the store did, so that a store failure
    // never costs a second request nor throws away a token just received.
    let own: { ok: true; entry: StoredToken } | { ok: false; error: unknown } | undefined;
    const fetchToken = async () => {
      try {
        const entry = await request(scopes, background, key, deadlineAt);
        own = { ok: true, entry };
        return entry;
      } catch (error) {
        own = { ok: false, error };
        throw error;
      }
    };
    let shared: unknown;
    try {
      shared = await store.singleFlight(key, fetchToken, {
        timeoutMs: sequenceBudgetMs,
        ...(replacing === undefined ? {} : { replacing }),
      });
    } catch (error) {
      const ownResult = own as typeof own;
      if (ownResult?.ok === false && (error === ownResult.error || error instanceof PartnerAuthError)) {
        throw error;
      }
      // Another process was told to retry later (the store shares the throttle): fail fast with it,
      // without a request of our own against an endpoint that throttles.
      const until = (error as { throttledUntil?: unknown } | null)?.throttledUntil;
      if (ownResult === undefined && typeof until === 'number' && until > clock.now()) {
        const left = Math.min(until - clock.now(), MAX_THROTTLE_MS);
        throttledUntil.set(key, clock.now() + left);
        emit({ type: 'throttled', scopes, retryAfterMs: left });
        throw throttled(scopes, left);
      }
      storeFailed('singleFlight', error);
      if (ownResult?.ok === true) return ownResult.entry;
      return request(scopes, background, key, deadlineAt);
    }
    const ownResult = own as typeof own;
    if (ownResult?.ok === true && shared === ownResult.entry) return ownResult.entry;
    const entry = await admit(key, scopes, shared);
    if (entry !== undefined && entry.accessToken !== replacing) return entry;
    if (entry !== undefined) {
      storeFailed('singleFlight', new TypeError('singleFlight resolved with the token being replaced'));
    }
    if (ownResult?.ok === true) return ownResult.entry;
    const mine = await request(scopes, background, key, deadlineAt);
    await storeSet(key, mine);
    return mine;
  };

  const fetchShared = (
    key: string,
    scopes: ScopeSet,
    background: boolean,
    replacing?: string,
    deadlineAt?: number,
  ): Promise<Held> => {
    const existing = inflight.get(key);
    if (existing) return existing;
    const now = clock.now();
    const until = throttledUntil.get(key);
    if (until !== undefined) {
      const left = until - now;
      if (left > 0) {
        emit({ type: 'throttled', scopes, retryAfterMs: left });
        return Promise.reject(throttled(scopes, left));
      }
      throttledUntil.delete(key);
    }
    const pause = paused.get(key);
    if (pause !== undefined && pause.until > now) return Promise.reject(pause.error);
    const promise = (async () => {
      try {
        // Another process may already have put a newer token in the shared store.
        if (store !== undefined && replacing !== undefined) {
          const newer = await storeGet(key, scopes);
          if (newer !== undefined && newer.accessToken !== replacing) {
            const held = hold(key, newer, scopes);
            if (clock.now() < held.refreshAt) return held;
          }
        }
        // A whole-second token is replaced from its exp on (see hold): asked for earlier, the new
        // one would expire only a second later.
        const current = memory.get(key);
        if (current !== undefined && current.entry.accessToken === replacing) {
          const wait = current.renewAt - clock.now();
          if (wait > 0 && (deadlineAt === undefined || current.renewAt < deadlineAt)) await sleep(wait);
        }
        const entry = await obtain(key, scopes, background, replacing, deadlineAt);
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
        // A throttle has its own fail-fast window (throttledUntil): no pause on top of it.
        if (!(error instanceof TokenThrottledError)) {
          const failures = (paused.get(key)?.failures ?? 0) + 1;
          // A failed refresh (background, or of a token still held) pauses for retry.maxDelayMs: callers
          // keep the token meanwhile. A failed wait for a first token pauses for the backoff bound of
          // its failure count. Callers within the pause share the failure instead of starting a sequence.
          const pauseMs =
            background || replacing !== undefined
              ? retry.maxDelayMs
              : Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (failures - 1));
          paused.set(key, { until: clock.now() + pauseMs, error, failures });
        }
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
  const lookup = async (key: string, wanted: ScopeSet): Promise<Held | undefined> => {
    let exact = memory.get(key);
    if (exact === undefined || clock.now() >= exact.hardAt) {
      const stored = await storeGet(key, wanted);
      // The store read took time: compare with the memory as it is now.
      exact = memory.get(key);
      if (stored !== undefined && (exact === undefined || stored.expiresAt > exact.entry.expiresAt)) {
        exact = hold(key, stored, wanted);
      }
    }
    // Read after every await: a decision on a clock read before one could serve an expired token.
    const now = clock.now();
    if (exact !== undefined && now < exact.hardAt && exact.covers) return exact;
    if (wanted.length > 0) {
      // A token granted a superset of the wanted scopes serves this narrower request as well.
      for (const [otherKey, other] of memory) {
        if (otherKey === key || now >= other.hardAt) continue;
        if (missingScopes(wanted, other.entry.grantedScopes).length === 0) {
          // Remembered, so that the next call for these scopes takes the warm path.
          if (exact === undefined && (covering.has(key) || covering.size < 64)) covering.set(key, other);
          return other;
        }
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

  const slowPath = async (
    key: string,
    wanted: ScopeSet,
    signal: AbortSignal | undefined,
    deadlineAt: number | undefined,
  ): Promise<AccessToken> => {
    // A token is handed out only if it has not expired at the moment it is handed out: one that
    // expired while this caller waited (a slow store, a long shared request) sends it round again.
    for (let round = 0; ; round++) {
      const held = await lookup(key, wanted);
      const now = clock.now();
      let fresh: Held;
      if (held !== undefined && now < held.hardAt) {
        if (missingScopes(wanted, held.entry.grantedScopes).length === 0) {
          if (now >= held.refreshAt) refreshInBackground(held.key, held, now);
          return serve(held);
        }
        // A decision made once is asked again (at most once per scopeRecheckMs): the console may have
        // granted the scope since.
        const last = askedAt.get(key);
        if (last !== undefined && now - last < scopeRecheckMs) throw notGranted(wanted, held.entry);
        fresh = await raceSignal(fetchShared(key, wanted, false, held.entry.accessToken, deadlineAt), signal);
      } else {
        // While a (remote) store read was pending, another caller's request may have completed.
        const latest = memory.get(key);
        if (latest !== undefined && latest !== held && latest.covers && now < latest.hardAt) {
          return serve(latest);
        }
        try {
          fresh = await raceSignal(
            fetchShared(key, wanted, false, held?.entry.accessToken, deadlineAt),
            signal,
          );
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
      }
      if (missingScopes(wanted, fresh.entry.grantedScopes).length > 0) throw notGranted(wanted, fresh.entry);
      if (fresh.entry.expiresAt > clock.now()) return fresh.view;
      if (round >= 1) {
        throw new TokenResponseError(
          `the token endpoint's tokens expired before they could be used (the last one at ${new Date(fresh.entry.expiresAt).toISOString()}, ${clock.now() - fresh.entry.expiresAt} ms ago); check this machine's clock and the token lifetime (expires_in).`,
        );
      }
    }
  };

  /** An aborted or timed-out wait, inside the PartnerApiError family (the reason is the cause). */
  const stopped = (reason: unknown, timeoutMs: number | undefined): PartnerAuthError =>
    timeoutMs !== undefined || (reason instanceof DOMException && reason.name === 'TimeoutError')
      ? new TokenTimeoutError(timeoutMs, reason)
      : new TokenAbortedError(reason);

  /** The slow path under the caller's signal and time limit: it never waits past either. */
  const bounded = async (
    key: string,
    wanted: ScopeSet,
    signal: AbortSignal | undefined,
    timeoutMs: number | undefined,
  ): Promise<AccessToken> => {
    const deadline =
      timeoutMs === undefined ? undefined : startDeadline(timeoutMs, `no token within ${timeoutMs} ms`);
    const limit =
      deadline === undefined ? signal : signal ? AbortSignal.any([signal, deadline.signal]) : deadline.signal;
    try {
      const deadlineAt = timeoutMs === undefined ? undefined : clock.now() + timeoutMs;
      return await raceSignal(slowPath(key, wanted, limit, deadlineAt), limit);
    } catch (error) {
      if (limit?.aborted && error === limit.reason) {
        const timedOut = deadline?.signal.aborted === true && deadline.signal.reason === limit.reason;
        throw stopped(limit.reason, timedOut ? timeoutMs : undefined);
      }
      throw error;
    } finally {
      deadline?.clear();
    }
  };

  const self: TokenProvider = {
    getToken(getOptions = {}) {
      const { signal, timeoutMs } = getOptions;
      if (signal?.aborted) return Promise.reject(stopped(signal.reason, undefined));
      if (
        timeoutMs !== undefined &&
        (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0)
      ) {
        return Promise.reject(
          new TypeError(`getToken: timeoutMs must be a finite number > 0, got ${String(timeoutMs)}.`),
        );
      }
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
      if (held === undefined) {
        // A narrower request served by a broader token held under another key.
        const broader = covering.get(key);
        if (broader !== undefined && memory.get(broader.key) === broader && clock.now() < broader.refreshAt) {
          return Promise.resolve(serve(broader));
        }
      } else if (held.covers && clock.now() < held.refreshAt) {
        return Promise.resolve(serve(held));
      }
      return bounded(key, wanted, signal, timeoutMs);
    },

    async invalidate(token) {
      await prepare();
      const target = typeof token === 'string' ? token : token?.accessToken;
      for (const [key, scopes] of known) {
        const held = memory.get(key);
        const stored = held === undefined ? await storeGet(key, scopes) : held.entry;
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

/** Tokens with a whole-second exp and at most this lifetime are renewed at their exp (see hold). */
const ALIGN_MAX_LIFETIME_MS = 6_000;
/** The hard window is at most this share of a token's lifetime. */
const HARD_SHARE = 0.05;
/** The soft window is at most this share of a token's lifetime: a short token is refreshed about once. */
const SOFT_SHARE = 0.12;
