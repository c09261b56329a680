import {
  type AccessToken,
  describeNetworkError,
  findBearerChallenge,
  PartnerApiError,
  ScopeNotGrantedError,
  TokenRequestError,
} from '@partner-lending/auth';
import { CallRequest } from './call-request.js';
import { type Deadline, startCallDeadline } from './deadline.js';
import {
  APIConnectionError,
  APITimeoutError,
  APIUserAbortError,
  ConfigurationError,
  RateLimitError,
  RedirectRefusedError,
} from './errors.js';
import { backoffMs, isRetryableStatus, retryAfterMs, retryPolicy } from './retry.js';

/** A request the transport sends: a WHATWG Request, or the client's lighter CallRequest. */
export type OutgoingRequest = Request | CallRequest;

/** Where the SDK writes what it does. `console` fits. Nothing secret is ever passed. */
export interface PartnerLogger {
  debug?(message: string, details?: Record<string, unknown>): void;
  warn?(message: string, details?: Record<string, unknown>): void;
}

/** Per-call options of every SDK method. */
export interface CallOptions {
  /** Cancels the call (token lookup, every attempt, the waits, the reading of the body). Raises `APIUserAbortError`. */
  signal?: AbortSignal | undefined;
  /**
   * Deadline of the whole call in ms — the token lookup, every attempt and retry wait, and the reading
   * of the answer's body. Default: the client's `timeoutMs`.
   */
  timeoutMs?: number | undefined;
  /**
   * Retries allowed on connection errors, 408, 429 and 5xx, within the deadline. Default: the client's
   * `maxRetries` for GET; 0 for creates (POST), which the API gives no idempotency key for: pass a
   * number only when sending the same create twice is harmless to you.
   */
  maxRetries?: number | undefined;
}

/** How the transport gets and drops tokens; absent = no Authorization header. */
export interface TokenSource {
  /** `timeoutMs`: what is left of the call's deadline (a Retry-After past it fails the call at once). */
  getToken(
    scopes: readonly string[] | undefined,
    signal: AbortSignal,
    timeoutMs: number,
    /** The least life the token must still have when handed over (a replay after a 401). */
    minValidityMs?: number,
  ): Promise<AccessToken>;
  invalidate(token: AccessToken): Promise<void>;
}

export interface TransportOptions {
  /** Sends one attempt. */
  fetch: typeof globalThis.fetch;
  /** Where tokens come from. */
  tokens?: TokenSource | undefined;
  /**
   * The configured API origin with a trailing slash (`https://api.example/`): the bearer token is
   * attached only to requests whose URL starts with it.
   */
  origin?: string | undefined;
  timeoutMs: number;
  maxRetries: number;
  now: () => number;
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  random: () => number;
  logger?: PartnerLogger | undefined;
  /** Replays after a 401 per call. Default MAX_AUTH_REPLAYS (tests lower it to show what the replays prevent). */
  maxAuthReplays?: number | undefined;
}

export interface TransportCall extends CallOptions {
  /** The scopes the operation needs (a frozen array per operation, so the provider caches its key). */
  scopes?: readonly string[] | undefined;
  /** The call's deadline when the caller (the client) started it; else one is started here. */
  deadline?: Deadline | undefined;
}

/** Sends a request with the token, the deadline, retries and error classification. */
export type Transport = (request: OutgoingRequest, call?: TransportCall) => Promise<Response>;

/**
 * Replays of one call after a 401: the first for any refused token (RFC 6750 §3: a revoked token, a
 * rotated key), the others only for a token that expired in flight. The bound of auth's createAuthFetch.
 */
export const MAX_AUTH_REPLAYS = 3;

const answers = new WeakMap<
  Response,
  { attempts: number; retryAfterMs: number | undefined; token: string | undefined }
>();

/** How many attempts the transport made for `response`, the wait the server last asked for, the token sent. */
export function attemptsOf(response: Response): {
  attempts: number;
  retryAfterMs: number | undefined;
  token: string | undefined;
} {
  return answers.get(response) ?? { attempts: 1, retryAfterMs: undefined, token: undefined };
}

/** Sleeps `ms`, rejecting with the signal's reason when it aborts first. */
export function defaultSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

const label = (request: OutgoingRequest) => {
  const url = new URL(request.url);
  return { where: `${request.method} ${url.pathname}`, host: url.host, origin: url.origin };
};

/** The error for a call that stopped on its deadline or the caller's signal. */
export function stopped(
  deadline: Deadline,
  request: OutgoingRequest | string | undefined,
  cause: unknown,
): PartnerApiError {
  if (deadline.userSignal?.aborted) {
    return new APIUserAbortError(undefined, { cause: deadline.userSignal.reason });
  }
  const what = typeof request === 'string' ? request : request ? label(request).where : 'the call';
  const ms = deadline.timeoutMs;
  if (deadline.phase === 'token') {
    return new APITimeoutError(
      `No access token for ${what} within ${ms} ms: the token endpoint did not answer in time. timeoutMs bounds the whole call, the token lookup included; check the auth service (PARTNER_AUTH_URL) or raise timeoutMs.`,
      { cause },
    );
  }
  return new APITimeoutError(
    `The partner API did not ${deadline.phase === 'body' ? 'finish sending the answer to' : 'answer'} ${what} within ${ms} ms (timeoutMs bounds the whole call: token, attempts, waits and body). Raise timeoutMs or retry later.`,
    { cause },
  );
}

export function createTransport(options: TransportOptions): Transport {
  const { logger, tokens } = options;
  /** What is left of a call's deadline, in ms (at least 1). */
  const remaining = (deadline: Deadline) => Math.max(1, deadline.at - options.now());
  /**
   * After a 429 or 503 with Retry-After, the API asked this client to wait (RFC 6585 §4, RFC 9110
   * §10.2.3): no request of any operation goes out before then. A call whose deadline ends first
   * fails at once with RateLimitError instead of waiting.
   */
  let pausedUntil = 0;
  return async function send(request, call = {}) {
    const own = call.deadline === undefined;
    const deadline =
      call.deadline ?? startCallDeadline(call.timeoutMs ?? options.timeoutMs, options.now(), call.signal);
    try {
      return await attempts(request, call, deadline);
    } finally {
      if (own) deadline.clear();
    }
  };

  async function attempts(
    request: OutgoingRequest,
    call: TransportCall,
    deadline: Deadline,
  ): Promise<Response> {
    const maxRetries = call.maxRetries ?? (request.method === 'GET' ? options.maxRetries : 0);
    if (tokens && options.origin !== undefined && !request.url.startsWith(options.origin)) {
      // The token is for the configured API only: never attach it to another origin.
      throw new ConfigurationError(
        `Refusing to send the access token to ${label(request).origin}: it only goes to the configured baseUrl (${options.origin.slice(0, -1)}). Remove the per-call baseUrl, or create a client for that API.`,
      );
    }
    // Buffered once so that every attempt (and the 401 replay) sends the same bytes.
    const body =
      request instanceof CallRequest
        ? (request.body ?? undefined)
        : request.body === null
          ? undefined
          : await request.arrayBuffer();
    const signal = deadline.signal;
    /** Replays after a 401 in this call (see MAX_AUTH_REPLAYS). */
    let replays = 0;
    /** Until when this call has already waited (a retry's delay serves the pause it was asked for). */
    let waitedUntil = 0;
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) throw stopped(deadline, request, signal.reason);
      const paused = pausedUntil - options.now();
      if (paused > 0 && pausedUntil > waitedUntil) {
        if (paused >= deadline.at - options.now())
          throw new RateLimitError(
            `${label(request).where} was not sent: the partner API asked this client to wait ${Math.ceil(paused)} ms more (Retry-After of an earlier 429/503), longer than what is left of timeoutMs. Retry after that.`,
            { attempts: attempt - 1, retryAfterMs: Math.ceil(paused) },
          );
        logger?.debug?.(
          `${label(request).where}: waiting ${Math.ceil(paused)} ms (Retry-After of an earlier answer)`,
        );
        await pause(paused, deadline, request);
      }
      let failure: PartnerApiError;
      let token: AccessToken | undefined;
      const started = options.now();
      try {
        if (tokens) {
          deadline.phase = 'token';
          token = await tokens.getToken(call.scopes, signal, remaining(deadline));
          request.headers.set('authorization', `Bearer ${token.accessToken}`);
        }
        deadline.phase = 'api';
        let sentAt = options.now();
        let answer = await sendOnce(request, body, signal);
        while (
          tokens &&
          token &&
          replays < (options.maxAuthReplays ?? MAX_AUTH_REPLAYS) &&
          answer.status === 401 &&
          findBearerChallenge(answer.headers.get('www-authenticate'))
        ) {
          const answeredAt = options.now();
          // RFC 6750 §3: the token was refused; a fresh token and a replay (a rotated key, a revoked
          // token). Replayed again only while the refused token had expired by the time it was
          // answered (it expired in flight: a stall, a queue, a slow connect); one refused while alive is
          // returned as is.
          if (replays > 0 && token.expiresAt > answeredAt) break;
          replays++;
          await discard(answer);
          await tokens.invalidate(token);
          deadline.phase = 'token';
          // The replay's token must outlive a repeat of the delay that made the refused one expire.
          token = await tokens.getToken(call.scopes, signal, remaining(deadline), answeredAt - sentAt);
          request.headers.set('authorization', `Bearer ${token.accessToken}`);
          deadline.phase = 'api';
          sentAt = options.now();
          answer = await sendOnce(request, body, signal);
        }
        deadline.phase = 'body';
        const now = options.now();
        const waitAsked = isRetryableStatus(answer.status) ? retryAfterMs(answer.headers, now) : undefined;
        if (waitAsked !== undefined && (answer.status === 429 || answer.status === 503))
          pausedUntil = Math.max(pausedUntil, now + Math.min(waitAsked, retryPolicy.maxRetryAfterMs));
        answers.set(answer, { attempts: attempt, retryAfterMs: waitAsked, token: token?.accessToken });
        if (logger?.debug) {
          logger.debug(`${label(request).where} → ${answer.status}`, {
            attempt,
            ms: now - started,
            requestId: answer.headers.get('x-request-id') ?? answer.headers.get('request-id') ?? undefined,
          });
        }
        if (!isRetryableStatus(answer.status) || attempt > maxRetries) return answer;
        const left = deadline.at - options.now();
        if (waitAsked !== undefined && (waitAsked > retryPolicy.maxRetryAfterMs || waitAsked >= left)) {
          // A wait longer than the cap or than what is left of the deadline helps nobody: fail fast.
          logger?.warn?.(
            `${label(request).where} → ${answer.status}: not retried, the server asks to wait ${waitAsked} ms (${Math.max(0, Math.round(left))} ms left of timeoutMs)`,
          );
          return answer;
        }
        const delay = waitAsked ?? backoffMs(attempt, options.random);
        if (delay >= left) return answer;
        logger?.warn?.(
          `${label(request).where} → ${answer.status}; retry ${attempt} of ${maxRetries} in ${Math.round(delay)} ms`,
        );
        await discard(answer);
        waitedUntil = options.now() + delay;
        await pause(delay, deadline, request);
        continue;
      } catch (error) {
        // The token provider's own timer (the time left, passed as timeoutMs) may fire just before ours.
        if (signal.aborted || (error as { code?: unknown }).code === 'ERR_TOKEN_TIMEOUT') {
          throw stopped(deadline, request, error);
        }
        if (error instanceof PartnerApiError) throw translateTokenError(error, call.scopes);
        if (error instanceof TypeError) {
          const { where, host } = label(request);
          failure = new APIConnectionError(
            `Could not reach the partner API at ${host} for ${where} (${describeNetworkError(error)}; ${attempt} attempt${attempt > 1 ? 's' : ''}). Check baseUrl (PARTNER_BASE_URL) and the network.`,
            { attempts: attempt, cause: error },
          );
        } else {
          throw error;
        }
      }
      if (attempt > maxRetries) throw failure;
      const delay = backoffMs(attempt, options.random);
      if (delay >= deadline.at - options.now()) throw failure;
      logger?.warn?.(
        `${label(request).where}: ${failure.code}; retry ${attempt} of ${maxRetries} in ${Math.round(delay)} ms`,
      );
      await pause(delay, deadline, request);
    }
  }

  /**
   * One attempt. Redirects are handled here, not by fetch: one to the same origin is followed (at most
   * 5, as browsers do 20), one to another origin is refused with RedirectRefusedError naming it — the
   * call and its token belong to the configured API.
   */
  async function sendOnce(request: OutgoingRequest, body: BodyInit | undefined, signal: AbortSignal) {
    // The client's CallRequest becomes fetch's one Request; a WHATWG Request is sent as it is (no copy
    // of ours); a body is re-sent from its bytes or text.
    let answer =
      request instanceof CallRequest
        ? await options.fetch(request.url, {
            method: request.method,
            headers: request.headers,
            redirect: 'manual',
            ...(body === undefined ? {} : { body }),
            signal,
          })
        : body === undefined
          ? await options.fetch(
              request,
              // The client builds its Requests with redirect 'manual' already: no second init field.
              request.redirect === 'manual' ? { signal } : { signal, redirect: 'manual' },
            )
          : await options.fetch(request.url, {
              method: request.method,
              headers: request.headers,
              redirect: 'manual',
              body,
              signal,
            });
    let url = request.url;
    let method = request.method;
    let payload = body;
    for (let hop = 0; isRedirect(answer.status); hop++) {
      const location = answer.headers.get('location');
      if (location === null) return answer;
      let target: URL;
      try {
        target = new URL(location, url);
      } catch {
        return answer;
      }
      await discard(answer);
      const shown = `${target.origin}${target.pathname}`;
      if (target.origin !== new URL(url).origin) {
        throw new RedirectRefusedError(
          `${method} ${new URL(url).pathname} was redirected (${answer.status}) to ${shown}, another origin: not followed, because the call and its access token belong to the configured API. If the API moved, set baseUrl (PARTNER_BASE_URL) to its new address.`,
          shown,
          { status: answer.status },
        );
      }
      if (hop >= 4) {
        throw new RedirectRefusedError(
          `${request.method} ${new URL(request.url).pathname} was redirected more than 5 times (last to ${shown}); check baseUrl (PARTNER_BASE_URL).`,
          shown,
          { status: answer.status },
        );
      }
      // 303, and 301/302 after a POST, turn into a GET without a body (RFC 9110 §15.4, as fetch does).
      if (answer.status === 303 || ((answer.status === 301 || answer.status === 302) && method === 'POST')) {
        method = 'GET';
        payload = undefined;
      }
      url = target.href;
      const headers = new Headers(request.headers);
      if (payload === undefined) headers.delete('content-type');
      answer = await options.fetch(url, {
        method,
        headers,
        redirect: 'manual',
        ...(payload === undefined ? {} : { body: payload }),
        signal,
      });
    }
    return answer;
  }

  async function pause(ms: number, deadline: Deadline, request: OutgoingRequest) {
    try {
      await options.sleep(ms, deadline.signal);
    } catch (error) {
      if (deadline.signal.aborted) throw stopped(deadline, request, error);
      throw error;
    }
  }
}

const isRedirect = (status: number) =>
  status === 301 || status === 302 || status === 303 || status === 307 || status === 308;

/**
 * A token endpoint that refuses a requested scope outright (400 `invalid_scope`, which RFC 6749 §5.2
 * allows instead of granting less) means the scope is not granted to this partner: the same
 * ScopeNotGrantedError as for a narrowed grant.
 */
export function translateTokenError(error: PartnerApiError, scopes: readonly string[] | undefined) {
  if (error instanceof TokenRequestError && error.error === 'invalid_scope' && scopes?.length) {
    return new ScopeNotGrantedError([...scopes], undefined);
  }
  return error;
}

async function discard(response: Response): Promise<void> {
  try {
    await response.body?.cancel();
  } catch {
    // nothing left to free
  }
}
