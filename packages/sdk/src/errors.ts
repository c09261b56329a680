import {
  ConfigurationError,
  findBearerChallenge,
  PartnerApiError,
  type PartnerApiErrorCode,
  type PartnerApiErrorDetails,
  redactTokens,
  redactTokensDeep,
} from '@partner-lending/auth';

export type { PartnerApiErrorCode, PartnerApiErrorDetails } from '@partner-lending/auth';
/**
 * `ConfigurationError`: an option or environment variable is missing or invalid (thrown by
 * `createPartnerClient`, a call with a bad per-call option, a body that is not JSON). The auth package's
 * class, one for the whole family: the token provider throws the same for its own options.
 */
export { ConfigurationError, PartnerApiError };

/** A successful answer did not have the shape the SDK needs (e.g. no loans array to paginate). */
export class ResponseShapeError extends PartnerApiError {
  override readonly name = 'ResponseShapeError';
  constructor(message: string, details?: PartnerApiErrorDetails) {
    super(message, 'ERR_RESPONSE_SHAPE', details);
  }
}

/** 400: the request was malformed. */
export class BadRequestError extends PartnerApiError {
  override readonly name = 'BadRequestError';
  constructor(message: string, details?: PartnerApiErrorDetails) {
    super(message, 'ERR_BAD_REQUEST', details);
  }
}

/** 401: the API refused the token, even after one fresh token and replay. */
export class AuthenticationError extends PartnerApiError {
  override readonly name = 'AuthenticationError';
  constructor(message: string, details?: PartnerApiErrorDetails) {
    super(message, 'ERR_AUTHENTICATION', details);
  }
}

/** 403: access denied for another reason than a missing scope (e.g. another partner's path). */
export class PermissionDeniedError extends PartnerApiError {
  override readonly name: string = 'PermissionDeniedError';
  constructor(
    message: string,
    details?: PartnerApiErrorDetails,
    code: PartnerApiErrorCode = 'ERR_PERMISSION_DENIED',
  ) {
    super(message, code, details);
  }
}

/** 403 with `error="insufficient_scope"` (RFC 6750 §3.1): the token lacks the operation's scope. */
export class InsufficientScopeError extends PermissionDeniedError {
  override readonly name = 'InsufficientScopeError';
  /** The scope the operation needs (from the challenge, else from the spec's operation map). */
  readonly scope: string | undefined;
  constructor(message: string, details?: PartnerApiErrorDetails & { scope?: string | undefined }) {
    super(message, details, 'ERR_INSUFFICIENT_SCOPE');
    this.scope = details?.scope;
  }
}

/** 404. */
export class NotFoundError extends PartnerApiError {
  override readonly name = 'NotFoundError';
  constructor(message: string, details?: PartnerApiErrorDetails) {
    super(message, 'ERR_NOT_FOUND', details);
  }
}

/** 409. */
export class ConflictError extends PartnerApiError {
  override readonly name = 'ConflictError';
  constructor(message: string, details?: PartnerApiErrorDetails) {
    super(message, 'ERR_CONFLICT', details);
  }
}

/** 422. */
export class UnprocessableEntityError extends PartnerApiError {
  override readonly name = 'UnprocessableEntityError';
  constructor(message: string, details?: PartnerApiErrorDetails) {
    super(message, 'ERR_UNPROCESSABLE_ENTITY', details);
  }
}

/** 429, after the retries the client was allowed. */
export class RateLimitError extends PartnerApiError {
  override readonly name = 'RateLimitError';
  /** What the server asked to wait (`retry-after-ms` / `Retry-After`), in ms. */
  readonly retryAfterMs: number | undefined;
  constructor(message: string, details?: PartnerApiErrorDetails & { retryAfterMs?: number | undefined }) {
    super(message, 'ERR_RATE_LIMIT', details);
    this.retryAfterMs = details?.retryAfterMs;
  }
}

/** 5xx, after the retries the client was allowed. */
export class InternalServerError extends PartnerApiError {
  override readonly name = 'InternalServerError';
  constructor(message: string, details?: PartnerApiErrorDetails) {
    super(message, 'ERR_INTERNAL_SERVER', details);
  }
}

/** No answer: DNS, refused or reset connection, TLS… (`cause` holds the network error). */
export class APIConnectionError extends PartnerApiError {
  override readonly name = 'APIConnectionError';
  constructor(message: string, details?: PartnerApiErrorDetails) {
    super(message, 'ERR_CONNECTION', details);
  }
}

/**
 * The partner API answered with a redirect to another origin. It is not followed: the call and its
 * access token belong to the configured API. `location` names the target (origin and path only).
 */
export class RedirectRefusedError extends PartnerApiError {
  /** Where the redirect pointed: origin and path, without query or fragment. */
  readonly location: string;

  constructor(message: string, location: string, details?: PartnerApiErrorDetails) {
    super(message, 'ERR_REDIRECT', details);
    this.location = location;
  }
}

/** No answer within the per-attempt timeout (`timeoutMs`), on every attempt allowed. */
export class APITimeoutError extends PartnerApiError {
  override readonly name = 'APITimeoutError';
  constructor(message: string, details?: PartnerApiErrorDetails) {
    super(message, 'ERR_TIMEOUT', details);
  }
}

/** The caller's `AbortSignal` fired. `cause` is the signal's reason. */
export class APIUserAbortError extends PartnerApiError {
  override readonly name = 'APIUserAbortError';
  constructor(
    message = 'The request was aborted by the caller’s AbortSignal.',
    details?: PartnerApiErrorDetails,
  ) {
    super(message, 'ERR_USER_ABORT', details);
  }
}

/** What the SDK knows about a call when its answer is an error. */
export interface ErrorContext {
  method: string;
  /** The path as sent, e.g. `/v3/partner/p-1/loans`. */
  path: string;
  /** The scope the operation needs, from the spec. */
  scope?: string | undefined;
  attempts?: number | undefined;
  retryAfterMs?: number | undefined;
  /** The access token sent: shortened wherever the server echoes it back. */
  token?: string | undefined;
}

/** The request id the server sent, if any. */
export function requestIdOf(headers: Headers): string | undefined {
  return headers.get('x-request-id') ?? headers.get('request-id') ?? undefined;
}

const stringField = (body: unknown, name: string): string | undefined => {
  if (typeof body !== 'object' || body === null) return undefined;
  const value = (body as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
};

/** Turns an error answer (status ≥ 400) into the matching `PartnerApiError` subclass. */
export function errorFromResponse(response: Response, body: unknown, context: ErrorContext): PartnerApiError {
  const { status } = response;
  // Whatever the server sends back is shown with tokens shortened: some servers echo the request.
  const tokens = context.token ? [context.token] : [];
  const clean = (text: string | undefined) => (text === undefined ? undefined : redactTokens(text, tokens));
  body = redactTokensDeep(body, tokens);
  const challenge = findBearerChallenge(clean(response.headers.get('www-authenticate') ?? undefined) ?? null);
  const errorCode = clean(challenge?.params.error ?? stringField(body, 'error'));
  const errorDescription = clean(
    challenge?.params.error_description ?? stringField(body, 'error_description'),
  );
  const requestId = clean(requestIdOf(response.headers));
  const details: PartnerApiErrorDetails = {
    status,
    errorCode,
    errorDescription,
    challenge,
    requestId,
    body,
    attempts: context.attempts,
  };
  const what = `${context.method} ${context.path}`;
  const facts = [
    `${status}${errorCode ? ` ${errorCode}` : ''}${errorDescription ? `: ${errorDescription}` : ''}`,
    ...(requestId ? [`request id ${requestId}`] : []),
    ...(context.attempts && context.attempts > 1 ? [`${context.attempts} attempts`] : []),
  ].join(', ');

  if (status === 400) {
    return new BadRequestError(
      `The partner API refused ${what} as malformed (${facts}). Check the parameters and body against the API reference.`,
      details,
    );
  }
  if (status === 401) {
    return new AuthenticationError(
      `The partner API refused the access token for ${what} (${facts})${challenge ? ', also after fetching a fresh token' : '; the answer had no WWW-Authenticate: Bearer challenge, so no fresh token was tried'}. Check that the audience (PARTNER_AUDIENCE, default PARTNER_BASE_URL) is this API's base URL and that the client credentials belong to this environment.`,
      details,
    );
  }
  if (status === 403 && errorCode === 'insufficient_scope') {
    const scope = challenge?.params.scope ?? context.scope;
    return new InsufficientScopeError(
      `The access token lacks ${scope ?? 'the scope this operation needs'} for ${what} (${facts}); ask for it in the partner console.`,
      { ...details, scope },
    );
  }
  if (status === 403) {
    return new PermissionDeniedError(
      `The partner API denied ${what} (${facts}). A token may only be used on its own partner's paths: leave partnerId out to use the token's own, or check the partner's access in the partner console.`,
      details,
    );
  }
  if (status === 404) {
    return new NotFoundError(
      `The partner API has nothing at ${what} (${facts}). Check the base URL (PARTNER_BASE_URL) and the partner id.`,
      details,
    );
  }
  if (status === 409) {
    return new ConflictError(
      `The partner API refused ${what} as conflicting with the current state (${facts}). Read the current state before sending it again.`,
      details,
    );
  }
  if (status === 422) {
    return new UnprocessableEntityError(
      `The partner API could not process the body of ${what} (${facts}). Check its fields against the API reference.`,
      details,
    );
  }
  if (status === 429) {
    const wait =
      context.retryAfterMs === undefined ? 'later' : `in ${Math.ceil(context.retryAfterMs / 1000)} s`;
    return new RateLimitError(
      `The partner API is rate limiting ${what} (${facts}). Slow down and retry ${wait}.`,
      { ...details, retryAfterMs: context.retryAfterMs },
    );
  }
  if (status >= 500) {
    return new InternalServerError(
      `The partner API failed on ${what} (${facts}). Retry later; if it persists, give support the request id.`,
      details,
    );
  }
  return new PartnerApiError(
    `The partner API answered ${what} with an error (${facts}). Check the request against the API reference.`,
    'ERR_API_STATUS',
    details,
  );
}
