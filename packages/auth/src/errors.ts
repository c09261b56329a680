import type { Challenge } from './challenge.js';

/** Codes of the auth package's errors. */
export type PartnerAuthErrorCode =
  | 'ERR_TOKEN_REQUEST'
  | 'ERR_NOT_APPROVED_FOR_PRODUCTION'
  | 'ERR_TOKEN_RESPONSE'
  | 'ERR_TOKEN_NETWORK'
  | 'ERR_TOKEN_THROTTLED'
  | 'ERR_TOKEN_ABORTED'
  | 'ERR_TOKEN_TIMEOUT'
  | 'ERR_SCOPE_NOT_GRANTED'
  | 'ERR_BEARER_INSUFFICIENT_SCOPE'
  | 'ERR_INSECURE_TOKEN_URL';

/**
 * Every stable code of the toolkit's error family, one per class: the auth package's and the SDK's.
 * Switch on `error.code`; the message wording may improve, the codes do not change.
 */
export type PartnerApiErrorCode =
  | PartnerAuthErrorCode
  | 'ERR_CONFIGURATION'
  | 'ERR_RESPONSE_SHAPE'
  | 'ERR_API_STATUS'
  | 'ERR_BAD_REQUEST'
  | 'ERR_AUTHENTICATION'
  | 'ERR_PERMISSION_DENIED'
  | 'ERR_INSUFFICIENT_SCOPE'
  | 'ERR_NOT_FOUND'
  | 'ERR_CONFLICT'
  | 'ERR_UNPROCESSABLE_ENTITY'
  | 'ERR_RATE_LIMIT'
  | 'ERR_INTERNAL_SERVER'
  | 'ERR_CONNECTION'
  | 'ERR_REDIRECT'
  | 'ERR_TIMEOUT'
  | 'ERR_USER_ABORT';

export interface PartnerApiErrorDetails {
  /** HTTP status of the answer, when there was one. */
  status?: number | undefined;
  /** The OAuth 2.0 / bearer error code: `error` of the challenge or of the JSON body (`invalid_token`…). */
  errorCode?: string | undefined;
  /** `error_description` of the challenge or of the body. */
  errorDescription?: string | undefined;
  /** The parsed `WWW-Authenticate: Bearer` challenge of the answer. */
  challenge?: Challenge | undefined;
  /** The server's request id (`x-request-id` or `request-id` header): quote it to support. */
  requestId?: string | undefined;
  /** The parsed error body (JSON when it was JSON, else text), tokens shortened. */
  body?: unknown;
  /** How many attempts were made (1 + retries). */
  attempts?: number | undefined;
  cause?: unknown;
}

/**
 * The root of the toolkit's error family: every error @partner-lending/sdk throws is an instance, the
 * auth package's errors included (through PartnerAuthError), so one `instanceof PartnerApiError`
 * catches them all. Carries a stable `code` and keeps the original `cause`. No error ever carries the
 * client secret or a whole access token: tokens appear as their last 6 characters at most.
 */
export class PartnerApiError extends Error {
  readonly code: PartnerApiErrorCode;
  readonly status: number | undefined;
  readonly errorCode: string | undefined;
  readonly errorDescription: string | undefined;
  readonly challenge: Challenge | undefined;
  readonly requestId: string | undefined;
  readonly body: unknown;
  readonly attempts: number | undefined;

  constructor(message: string, code: PartnerApiErrorCode, details: PartnerApiErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.code = code;
    this.status = details.status;
    this.errorCode = details.errorCode;
    this.errorDescription = details.errorDescription;
    this.challenge = details.challenge;
    this.requestId = details.requestId;
    this.body = details.body;
    this.attempts = details.attempts;
  }
}

/**
 * An option or argument is missing or invalid: `createTokenProvider`'s options (an empty `clientSecret`,
 * both `authUrl` and `tokenUrl`…), `getToken`'s (`timeoutMs: 0`), `createAuthFetch`'s, a scope value, a
 * header given to `parseWwwAuthenticate`; in the SDK, `createPartnerClient`'s options and `PARTNER_*`
 * variables and a per-call option. The message names it, what it takes and what to do; nothing was sent.
 * Not a TypeError: the value was read, and refused. The family's own class, shared with the SDK (which
 * re-exports it): a PartnerApiError, not a PartnerAuthError, since no token request failed.
 */
export class ConfigurationError extends PartnerApiError {
  override readonly name = 'ConfigurationError';
  constructor(message: string, details?: PartnerApiErrorDetails) {
    super(message, 'ERR_CONFIGURATION', details);
  }
}

/**
 * Base class of the auth package's errors, for code that uses it alone; a PartnerApiError, so the
 * SDK's catch-all catches these too.
 */
export class PartnerAuthError extends PartnerApiError {
  override readonly code: PartnerAuthErrorCode;

  constructor(code: PartnerAuthErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, code, options?.cause === undefined ? {} : { cause: options.cause });
    this.code = code;
  }
}

/** The token endpoint refused the request: 400/401/403 (not retried), or another final error status. */
export class TokenRequestError extends PartnerAuthError {
  /** HTTP status of the token endpoint's answer. */
  override readonly status: number;
  /** The OAuth `error` code (RFC 6749 §5.2), e.g. `invalid_client`, `invalid_scope`. */
  readonly error: string | undefined;

  constructor(
    message: string,
    details: { status: number; error?: string | undefined; errorDescription?: string | undefined },
    options?: { cause?: unknown },
  ) {
    super('ERR_TOKEN_REQUEST', message, options);
    this.status = details.status;
    this.error = details.error;
    // The family's fields: the OAuth error and its description, as the SDK's errors carry them.
    Object.assign(this, { errorCode: details.error, errorDescription: details.errorDescription });
  }
}

/**
 * The production token endpoint refused the partner because it is not approved for production
 * (never approved, approval revoked or expired): RFC 6749 §5.2 `unauthorized_client` from a provider
 * created with `environment: 'production'`. `errorDescription` is the endpoint's own words (why, and
 * where to certify). A TokenRequestError, so code that handles those still catches it.
 */
export class NotApprovedForProductionError extends TokenRequestError {
  override readonly code: 'ERR_NOT_APPROVED_FOR_PRODUCTION' = 'ERR_NOT_APPROVED_FOR_PRODUCTION';

  /** Wraps the token endpoint's refusal; the refusal stays the `cause`. */
  static from(refusal: TokenRequestError): NotApprovedForProductionError {
    const said = refusal.errorDescription;
    return new NotApprovedForProductionError(
      `not approved for production: the production token endpoint refused a token (${refusal.status} ${refusal.error ?? 'error'})${
        said ? `, saying: ${said}` : ''
      }. Production opens after a certification run passes and a reviewer approves it; get (or renew) that approval, then try again.`,
      { status: refusal.status, error: refusal.error, errorDescription: said },
      { cause: refusal },
    );
  }
}

/** The token endpoint answered 200 but the answer is unusable: not JSON, too large, fields or claims wrong. */
export class TokenResponseError extends PartnerAuthError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_TOKEN_RESPONSE', message, options);
  }
}

/** The token endpoint could not be reached (connection failure, timeout) after every attempt. */
export class TokenNetworkError extends PartnerAuthError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_TOKEN_NETWORK', message, options);
  }
}

/** The token endpoint asked us to slow down (429/503 with Retry-After); requests fail fast until it passes. */
export class TokenThrottledError extends PartnerAuthError {
  /** Milliseconds until a new token request will be sent. */
  readonly retryAfterMs: number;
  /** Epoch ms (the provider's clock) from which a new token request will be sent. */
  readonly retryAt: number;

  constructor(message: string, retryAfterMs: number, options?: { cause?: unknown; now?: number }) {
    super('ERR_TOKEN_THROTTLED', message, options);
    this.retryAfterMs = retryAfterMs;
    this.retryAt = (options?.now ?? Date.now()) + retryAfterMs;
  }
}

/**
 * The caller's `signal` aborted `getToken()`: the caller stopped waiting (the shared token request goes
 * on for other callers). The signal's reason is the `cause`.
 */
export class TokenAbortedError extends PartnerAuthError {
  constructor(cause: unknown) {
    super(
      'ERR_TOKEN_ABORTED',
      'getToken() was aborted by its signal before a token was ready; nothing to fix unless the abort was unexpected (the token request goes on for other callers).',
      { cause },
    );
  }
}

/**
 * No token within the caller's time limit (`getToken({ timeoutMs })`, or a signal that aborted with a
 * `TimeoutError`, such as `AbortSignal.timeout()`). The shared token request goes on for other callers.
 */
export class TokenTimeoutError extends PartnerAuthError {
  /** The time limit, in ms, when known. */
  readonly timeoutMs: number | undefined;

  constructor(timeoutMs: number | undefined, cause?: unknown) {
    super(
      'ERR_TOKEN_TIMEOUT',
      `no access token within ${timeoutMs === undefined ? "the caller's time limit" : `${timeoutMs} ms`}: the token endpoint or the shared token store was too slow; check the auth service (authUrl/tokenUrl) and the store, or allow more time.`,
      cause === undefined ? undefined : { cause },
    );
    this.timeoutMs = timeoutMs;
  }
}

/** The caller needs scopes the token server did not grant (the intersection dropped them). */
export class ScopeNotGrantedError extends PartnerAuthError {
  readonly missingScopes: readonly string[];
  readonly grantedScopes: readonly string[];

  /**
   * @param grantedScopes What the token grants; undefined when the token endpoint refused the request
   *   outright (400 invalid_scope) so nothing is known of what it would grant.
   */
  constructor(missingScopes: readonly string[], grantedScopes: readonly string[] | undefined) {
    super(
      'ERR_SCOPE_NOT_GRANTED',
      `the token server did not grant ${missingScopes.map((s) => `"${s}"`).join(', ')} (${
        grantedScopes === undefined
          ? 'it refused the request with invalid_scope'
          : `granted: ${grantedScopes.length === 0 ? 'none' : grantedScopes.join(' ')}`
      }); ask the partner administration console to authorise ${
        missingScopes.length === 1 ? 'this scope' : 'these scopes'
      } for the client, or do not call operations that need ${missingScopes.length === 1 ? 'it' : 'them'}.`,
    );
    this.missingScopes = missingScopes;
    this.grantedScopes = grantedScopes ?? [];
  }
}

/** The API answered 403 with a Bearer challenge `error="insufficient_scope"` (RFC 6750 §3.1). */
export class BearerInsufficientScopeError extends PartnerAuthError {
  /** The scope the challenge says the request needs (`scope` auth-param), when given. */
  readonly scope: string | undefined;
  override readonly status: 403;

  constructor(scope: string | undefined, errorDescription?: string | undefined) {
    super(
      'ERR_BEARER_INSUFFICIENT_SCOPE',
      `the API refused the request with 403 insufficient_scope${scope ? ` (needs "${scope}")` : ''}${
        errorDescription ? `: ${errorDescription}` : ''
      }; the access token lacks a scope this operation requires: ask for it in getToken({ scopes }) and make sure the client is authorised for it.`,
    );
    this.scope = scope;
    this.status = 403;
  }
}

/** The token (or JWKS) URL is plain http on a non-loopback host: the client secret would travel in clear. */
export class InsecureTokenUrlError extends PartnerAuthError {
  constructor(message: string) {
    super('ERR_INSECURE_TOKEN_URL', message);
  }
}
