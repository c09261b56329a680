/**
 * One base class for every error this package throws, with a stable string `code` that callers can
 * switch on (the message wording may improve; the codes do not change) and the original `cause` kept.
 * No error ever carries the client secret or a whole access token: tokens appear as their last 6
 * characters at most.
 */
export class PartnerAuthError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
  }
}

/** The token endpoint refused the request: 400/401/403 (not retried), or another final error status. */
export class TokenRequestError extends PartnerAuthError {
  /** HTTP status of the token endpoint's answer. */
  readonly status: number;
  /** The OAuth `error` code (RFC 6749 §5.2), e.g. `invalid_client`, `invalid_scope`. */
  readonly error: string | undefined;
  /** The OAuth `error_description`, when the server sent one. */
  readonly errorDescription: string | undefined;

  constructor(
    message: string,
    details: { status: number; error?: string | undefined; errorDescription?: string | undefined },
    options?: { cause?: unknown },
  ) {
    super('ERR_TOKEN_REQUEST', message, options);
    this.status = details.status;
    this.error = details.error;
    this.errorDescription = details.errorDescription;
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

  constructor(message: string, retryAfterMs: number, options?: { cause?: unknown }) {
    super('ERR_TOKEN_THROTTLED', message, options);
    this.retryAfterMs = retryAfterMs;
  }
}

/** The caller needs scopes the token server did not grant (the intersection dropped them). */
export class ScopeNotGrantedError extends PartnerAuthError {
  readonly missingScopes: readonly string[];
  readonly grantedScopes: readonly string[];

  constructor(missingScopes: readonly string[], grantedScopes: readonly string[]) {
    super(
      'ERR_SCOPE_NOT_GRANTED',
      `the token server did not grant ${missingScopes.map((s) => `"${s}"`).join(', ')} (granted: ${
        grantedScopes.length === 0 ? 'none' : grantedScopes.join(' ')
      }); ask the partner administration console to authorise ${
        missingScopes.length === 1 ? 'this scope' : 'these scopes'
      } for the client, or do not call operations that need ${missingScopes.length === 1 ? 'it' : 'them'}.`,
    );
    this.missingScopes = missingScopes;
    this.grantedScopes = grantedScopes;
  }
}

/** The API answered 403 with a Bearer challenge `error="insufficient_scope"` (RFC 6750 §3.1). */
export class BearerInsufficientScopeError extends PartnerAuthError {
  /** The scope the challenge says the request needs (`scope` auth-param), when given. */
  readonly scope: string | undefined;
  readonly status: 403;

  constructor(scope: string | undefined, errorDescription?: string | undefined) {
    super(
      'ERR_INSUFFICIENT_SCOPE',
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
