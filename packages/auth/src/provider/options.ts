import type { AccessToken } from '../access-token.js';
import type { Clock, Sleep } from '../clock.js';
import { realSleep, systemClock } from '../clock.js';
import { createStderrLogger, logLevelFromEnv, logTokenEvent } from '../env-logger.js';
import { ConfigurationError } from '../errors.js';
import { defaultRetryPolicy, type RetryOptions, type RetryPolicy, resolveRetryPolicy } from '../retry.js';
import { normalizeScopes, type ScopeSet } from '../scope-set.js';
import { assertSecureUrl, isLoopbackHost, resolveTokenUrl } from '../token-endpoint.js';
import type { TokenEvent } from '../token-event.js';
import type { TokenStore } from '../token-store.js';
import type { RefreshWindows } from './refresh-plan.js';

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

/** Which of the vendor's environments a provider talks to. */
export type PartnerEnvironment = 'staging' | 'production';

export interface TokenProviderOptions {
  /**
   * The environment of the token endpoint: part of every cache key (a shared store never hands a
   * token of one environment to the other), and with 'production' a refusal `unauthorized_client`
   * is a NotApprovedForProductionError. Default: none (keys without an environment, as before).
   */
  environment?: PartnerEnvironment;
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
  /**
   * The least time, in ms, the token must still have when it is handed over, beyond the safety window:
   * e.g. how long this caller's last API request took to be answered, so that a replay after a 401
   * does not get a token that expires in flight again. A held token with less left is replaced (callers
   * wait for the request). Capped at half the token's lifetime, so a token in the first half of its
   * life always serves and a token just received is never refused. Default: none (the safety window alone).
   */
  minValidityMs?: number;
}

export interface TokenProvider {
  /**
   * A valid token covering `scopes`: from the cache when possible, else from the token endpoint.
   * Throws ScopeNotGrantedError when a needed scope was not granted.
   */
  getToken(options?: GetTokenOptions): Promise<AccessToken>;
  /** Drops the cached token equal to `token`, or every cached token of this provider when none is given. */
  invalidate(token?: AccessToken | string): Promise<void>;
  /** The environment the provider was created for, when it says (createTokenProvider's does). */
  readonly environment?: PartnerEnvironment | undefined;
}

function requireString(value: unknown, name: string, what: string): string {
  if (typeof value !== 'string' || value === '') {
    throw new ConfigurationError(`createTokenProvider: ${name} must be a non-empty string (${what}).`);
  }
  return value;
}

function nonNegative(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new ConfigurationError(
      `createTokenProvider: ${name} must be a finite number ≥ 0, got ${String(value)}.`,
    );
  }
  return value;
}

/** The options of a provider, checked and with every default filled in. */
export interface ResolvedOptions {
  environment: PartnerEnvironment | undefined;
  clientId: string;
  clientSecret: string;
  audience: string;
  clientAuth: 'body' | 'basic';
  allowInsecure: boolean;
  tokenUrl: URL;
  fetch: typeof globalThis.fetch;
  clock: Clock;
  sleep: Sleep;
  random: () => number;
  windows: RefreshWindows;
  clockSkewMs: number;
  scopeRecheckMs: number;
  retry: RetryPolicy;
  requestTimeoutMs: number;
  store: TokenStore | undefined;
  defaultScopes: ScopeSet;
  /** The observer (onEvent, or the PARTNER_LOG logger), if any. */
  observed: boolean;
  /** Reports an event to the observer; an observer that throws never breaks token handling. */
  emit(event: TokenEvent): void;
}

/** Checks the options (ConfigurationError naming the option) and fills in the defaults. */
export function resolveOptions(options: TokenProviderOptions): ResolvedOptions {
  const clientId = requireString(options.clientId, 'clientId', 'from the partner administration console');
  const clientSecret = requireString(
    options.clientSecret,
    'clientSecret',
    'from the partner administration console',
  );
  const audience = requireString(options.audience, 'audience', 'the partner API base URL');
  const { environment } = options;
  if (environment !== undefined && environment !== 'staging' && environment !== 'production') {
    throw new ConfigurationError(
      `createTokenProvider: environment must be 'staging' or 'production', got ${JSON.stringify(environment)}.`,
    );
  }
  const clientAuth = options.clientAuth ?? 'body';
  if (clientAuth !== 'body' && clientAuth !== 'basic') {
    throw new ConfigurationError(
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
  const refresh = options.refresh ?? {};
  const windows: RefreshWindows = {
    softWindowMs: nonNegative(refresh.softWindowMs, 60_000, 'refresh.softWindowMs'),
    softWindowRatio: nonNegative(refresh.softWindowRatio, 0.1, 'refresh.softWindowRatio'),
    hardWindowMs: nonNegative(refresh.hardWindowMs, 5_000, 'refresh.hardWindowMs'),
    jitterRatio: nonNegative(refresh.jitterRatio, 0.2, 'refresh.jitterRatio'),
  };
  const clockSkewMs = nonNegative(refresh.clockSkewMs, 30_000, 'refresh.clockSkewMs');
  const scopeRecheckMs = nonNegative(refresh.scopeRecheckMs, 60_000, 'refresh.scopeRecheckMs');
  const retry = resolveRetryPolicy(options.retry, defaultRetryPolicy, 'createTokenProvider: retry');
  const requestTimeoutMs = nonNegative(options.requestTimeoutMs, 10_000, 'requestTimeoutMs');
  // PARTNER_LOG=debug|info|warn logs token events to stderr when no onEvent observer is given.
  const envLevel = logLevelFromEnv(globalThis.process?.env?.PARTNER_LOG);
  const envLogger =
    envLevel && !options.onEvent ? createStderrLogger(envLevel, [clientId, clientSecret]) : undefined;
  const onEvent = options.onEvent ?? (envLogger && ((event: TokenEvent) => logTokenEvent(envLogger, event)));
  return {
    environment,
    clientId,
    clientSecret,
    audience,
    clientAuth,
    allowInsecure,
    tokenUrl,
    fetch: options.fetch ?? globalThis.fetch,
    clock: options.clock ?? systemClock,
    sleep: options.sleep ?? realSleep,
    random: options.random ?? Math.random,
    windows,
    clockSkewMs,
    scopeRecheckMs,
    retry,
    requestTimeoutMs,
    store: options.store,
    defaultScopes: normalizeScopes(options.scopes ?? []),
    observed: onEvent !== undefined,
    emit: (event) => {
      if (!onEvent) return;
      try {
        onEvent(event);
      } catch {
        // an observer must not break token handling
      }
    },
  };
}
