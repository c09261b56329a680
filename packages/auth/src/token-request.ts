import { type Clock, raceSignal, type Sleep, startDeadline } from './clock.js';
import { PartnerAuthError, TokenNetworkError, TokenRequestError, TokenThrottledError } from './errors.js';
import { describeNetworkError, redactSecrets, redactTokens } from './redact.js';
import { backoffDelay, isRetryableStatus, type RetryPolicy, retryAfterFromHeaders } from './retry.js';
import type { ScopeSet } from './scope-set.js';
import type { TokenEvent } from './token-event.js';
import { readBodyLimited } from './token-response.js';

/** What goes into one client-credentials token request (RFC 6749 §4.4.2; API documentation §2.1 and §4.1). */
export interface TokenRequestParams {
  tokenUrl: URL;
  clientId: string;
  clientSecret: string;
  audience: string;
  scopes: ScopeSet;
  /** `body`: client_id/client_secret form fields; `basic`: HTTP Basic (RFC 6749 §2.3.1). */
  clientAuth: 'body' | 'basic';
}

/** application/x-www-form-urlencoded encoding of one value, as RFC 6749 §2.3.1 asks for Basic credentials. */
function formEncode(value: string): string {
  return new URLSearchParams({ v: value }).toString().slice(2);
}

/** The credentials as sent and as a server might echo them, longest first (redacted in that order). */
function credentialForms(params: TokenRequestParams): string[] {
  const forms = new Set<string>();
  for (const value of [params.clientSecret, params.clientId]) {
    forms.add(value);
    forms.add(formEncode(value));
    forms.add(encodeURIComponent(value));
  }
  forms.add(btoa(`${formEncode(params.clientId)}:${formEncode(params.clientSecret)}`));
  return [...forms].sort((a, b) => b.length - a.length);
}

/** Builds the token request. The scope list is sent sorted and deduplicated (the caller normalised it). */
export function buildTokenRequest(params: TokenRequestParams, signal?: AbortSignal): Request {
  const body = new URLSearchParams();
  body.set('grant_type', 'client_credentials');
  if (params.scopes.length > 0) body.set('scope', params.scopes.join(' '));
  body.set('audience', params.audience);
  const headers = new Headers({
    accept: 'application/json',
    'content-type': 'application/x-www-form-urlencoded',
  });
  if (params.clientAuth === 'basic') {
    const credentials = `${formEncode(params.clientId)}:${formEncode(params.clientSecret)}`;
    headers.set('authorization', `Basic ${btoa(credentials)}`);
  } else {
    body.set('client_id', params.clientId);
    body.set('client_secret', params.clientSecret);
  }
  return new Request(params.tokenUrl, {
    method: 'POST',
    headers,
    body: body.toString(),
    // A redirect would re-send the credentials to wherever the Location header points.
    redirect: 'manual',
    cache: 'no-store',
    ...(signal ? { signal } : {}),
  });
}

export interface SendTokenRequestDeps<T> {
  fetch: typeof globalThis.fetch;
  clock: Clock;
  sleep: Sleep;
  random: () => number;
  retry: RetryPolicy;
  /** Time limit of one attempt: sending, waiting for the answer and reading its body. */
  requestTimeoutMs: number;
  background: boolean;
  emit: (event: TokenEvent) => void;
  /** Called when the server asks to back off (429/503 with Retry-After): fail fast until `until`. */
  onThrottle: (until: number) => void;
  /** Reads and validates a 2xx answer, inside the attempt's deadline (a body cut off is retried). */
  process: (response: Response, requestedAt: number) => Promise<T>;
  /** Stops the whole sequence (e.g. the caller's deadline). */
  signal?: AbortSignal | undefined;
  /**
   * Epoch ms (deps.clock) by which the caller that started the sequence needs an answer: a wait
   * (Retry-After or backoff) that would end past it is not waited for, the failure is thrown at once.
   */
  deadlineAt?: number | undefined;
}

/**
 * The longest a Retry-After keeps token requests failing fast (1 hour): a longer ask (`Retry-After:
 * 999999`, a misconfigured proxy) is honoured for an hour, then one request is tried again.
 */
export const MAX_THROTTLE_MS = 3_600_000;

const hints: Record<string, string> = {
  invalid_client:
    'check clientId and clientSecret, and clientAuth (body or basic) against what the auth service expects',
  invalid_scope: 'check the requested scopes: they must be known and authorised for this client',
  unauthorized_client:
    'this client may not use the client_credentials grant; check its set-up in the partner console',
  access_denied:
    'the client may not get tokens for this audience; check the audience (the partner API base URL)',
  invalid_request: 'the request was malformed; check authUrl/tokenUrl and the audience',
  unsupported_grant_type:
    'the server does not accept client_credentials at this endpoint; check authUrl/tokenUrl',
  invalid_grant: 'the server refused the grant; check the client set-up in the partner console',
};

async function readOAuthError(
  response: Response,
  secrets: readonly string[],
): Promise<{ error?: string; errorDescription?: string }> {
  try {
    const text = new TextDecoder().decode(await readBodyLimited(response, 64 * 1024));
    const body: unknown = JSON.parse(text);
    if (typeof body !== 'object' || body === null) return {};
    const { error, error_description: description } = body as Record<string, unknown>;
    return {
      ...(typeof error === 'string'
        ? { error: redactTokens(redactSecrets(error, secrets)).slice(0, 100) }
        : {}),
      ...(typeof description === 'string'
        ? { errorDescription: redactTokens(redactSecrets(description, secrets)).slice(0, 500) }
        : {}),
    };
  } catch {
    return {};
  }
}

function statusError(
  url: URL,
  status: number,
  oauth: { error?: string; errorDescription?: string },
  attempts: number,
): TokenRequestError {
  const what = oauth.error
    ? `${oauth.error}${oauth.errorDescription ? ` (${oauth.errorDescription})` : ''}`
    : 'no OAuth error code';
  const hint =
    (oauth.error && hints[oauth.error]) ??
    (status === 401
      ? hints.invalid_client
      : status === 403
        ? hints.access_denied
        : status === 404 || status === 405
          ? 'check authUrl/tokenUrl: it does not look like the token endpoint'
          : status >= 500
            ? 'the auth service is failing; try again later'
            : 'check the token request settings');
  return new TokenRequestError(
    `the token endpoint ${url.origin}${url.pathname} answered ${status} with ${what}${
      attempts > 1 ? ` after ${attempts} attempts` : ''
    }; ${hint}.`,
    { status, error: oauth.error, errorDescription: oauth.errorDescription },
  );
}

async function discard(response: Response): Promise<void> {
  try {
    await response.body?.cancel();
  } catch {
    // nothing to free
  }
}

/** A failure the retry loop may try again after `delayMs` (undefined: backoff). */
class Retryable {
  constructor(
    readonly error: PartnerAuthError,
    readonly reason: 'network' | 'status',
    readonly status?: number,
    readonly delayMs?: number,
  ) {}
}

/**
 * Sends the token request, retrying network errors (a connection refused or cut mid-answer, a
 * timeout), 408, 429 and 5xx with full-jitter backoff or the server's Retry-After. Each attempt is
 * bounded by `requestTimeoutMs` with a timer of our own, from sending to the last byte of the body.
 * Resolves with what `process` made of the 2xx answer; throws a PartnerAuthError otherwise.
 */
export async function sendTokenRequest<T>(
  params: TokenRequestParams,
  deps: SendTokenRequestDeps<T>,
): Promise<T> {
  const { retry, clock, emit, background } = deps;
  // The client id is a credential too (API documentation §2.1): scrub both from server-provided text,
  // in every form they were sent in (raw, form- or URI-encoded, and the Basic header value).
  const secrets = credentialForms(params);
  const where = `${params.tokenUrl.origin}${params.tokenUrl.pathname}`;
  const host = params.tokenUrl.host;
  for (let attempt = 1; ; attempt++) {
    deps.signal?.throwIfAborted();
    const requestedAt = clock.now();
    emit({ type: 'token-requested', tokenUrl: where, scopes: params.scopes, attempt, background });
    const deadline = startDeadline(deps.requestTimeoutMs, `no answer within ${deps.requestTimeoutMs} ms`);
    const signal = deps.signal ? AbortSignal.any([deps.signal, deadline.signal]) : deadline.signal;
    let outcome: Retryable;
    try {
      return await raceSignal(attemptOnce(attempt, requestedAt, signal), signal);
    } catch (error) {
      if (deps.signal?.aborted) throw deps.signal.reason;
      if (error instanceof Retryable) outcome = error;
      else if (error instanceof PartnerAuthError) throw error;
      else {
        const timedOut = deadline.signal.aborted;
        const detail = timedOut
          ? `it did not answer within ${deps.requestTimeoutMs} ms (requestTimeoutMs)`
          : `could not connect to ${host} or the connection dropped (${redactSecrets(describeNetworkError(error), secrets)})`;
        outcome = new Retryable(
          new TokenNetworkError(
            `could not get a token from ${where} after ${attempt} attempt${attempt === 1 ? '' : 's'}: ${detail}; check that the auth service is reachable from this host (authUrl/tokenUrl, DNS, proxy, firewall).`,
            { cause: error },
          ),
          'network',
        );
      }
    } finally {
      deadline.clear();
    }
    if (attempt > retry.maxRetries) throw outcome.error;
    const delayMs = outcome.delayMs ?? backoffDelay(attempt, retry, deps.random);
    // A wait that would end past the caller's deadline helps nobody: fail now.
    if (deps.deadlineAt !== undefined && clock.now() + delayMs >= deps.deadlineAt) throw outcome.error;
    emit({
      type: 'retry-scheduled',
      scopes: params.scopes,
      attempt,
      delayMs,
      reason: outcome.reason,
      ...(outcome.status === undefined ? {} : { status: outcome.status }),
    });
    await deps.sleep(delayMs, deps.signal);
  }

  async function readOrDiscard(response: Response, read: boolean) {
    if (read) return readOAuthError(response, secrets);
    await discard(response);
    return {};
  }

  async function attemptOnce(attempt: number, requestedAt: number, signal: AbortSignal): Promise<T> {
    const response = await deps.fetch(buildTokenRequest(params, signal));
    const { status } = response;
    if (status >= 200 && status <= 299) return deps.process(response, requestedAt);
    if (status >= 300 && status <= 399) {
      await discard(response);
      const location = response.headers.get('location');
      throw new TokenRequestError(
        `the token endpoint ${where} answered ${status} redirecting${
          location ? ` to ${redactTokens(redactSecrets(location, secrets)).slice(0, 200)}` : ''
        }; redirects are not followed because they would re-send the client credentials: set authUrl/tokenUrl to the final address.`,
        { status },
      );
    }
    const last = attempt > retry.maxRetries;
    if (!isRetryableStatus(status)) {
      throw statusError(params.tokenUrl, status, await readOAuthError(response, secrets), attempt);
    }
    const retryAfter = retryAfterFromHeaders(response.headers, clock.now());
    if ((status === 429 || status === 503) && retryAfter !== undefined) {
      const now = clock.now();
      const waitMs = Math.min(retryAfter, MAX_THROTTLE_MS);
      // Waited for in line only when it is short (retry.maxRetryAfterMs) and ends before the caller's
      // deadline; otherwise the caller learns at once, and every request fails fast until then.
      const inLine =
        !last &&
        waitMs <= retry.maxRetryAfterMs &&
        (deps.deadlineAt === undefined || now + waitMs < deps.deadlineAt);
      deps.onThrottle(now + waitMs);
      emit({ type: 'throttled', scopes: params.scopes, retryAfterMs: waitMs, status });
      const oauth = await readOrDiscard(response, !inLine);
      const error = new TokenThrottledError(
        `the token endpoint ${where} answered ${status} asking to retry after ${Math.ceil(waitMs / 1000)} s${
          oauth.error ? ` (${oauth.error})` : ''
        }; token requests for these scopes fail fast until then: retry later or lower the request rate.`,
        waitMs,
        { now },
      );
      if (!inLine) throw error;
      throw new Retryable(error, 'status', status, waitMs);
    }
    const oauth = await readOrDiscard(response, last);
    const error = statusError(params.tokenUrl, status, oauth, attempt);
    if (last) throw error;
    if (retryAfter !== undefined && retryAfter > retry.maxRetryAfterMs) throw error;
    throw new Retryable(error, 'status', status, retryAfter);
  }
}
