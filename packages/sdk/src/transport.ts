import { APIConnectionError, APITimeoutError, APIUserAbortError, PartnerApiError } from './errors.js';
import { backoffMs, isRetryableStatus, retryAfterMs, retryPolicy } from './retry.js';

/** Where the SDK writes what it does. `console` fits. Nothing secret is ever passed. */
export interface PartnerLogger {
  debug?(message: string, details?: Record<string, unknown>): void;
  warn?(message: string, details?: Record<string, unknown>): void;
}

/** Per-call options of every SDK method. */
export interface CallOptions {
  /** Cancels the call (all attempts and waits). Raises `APIUserAbortError`. The signal of the Request itself is not used. */
  signal?: AbortSignal | undefined;
  /** Per-attempt timeout in ms; default: the client's `timeoutMs`. */
  timeoutMs?: number | undefined;
  /**
   * Retries allowed on connection errors, timeouts, 408, 429 and 5xx. Default: the client's
   * `maxRetries` for GET; 0 for creates (POST), which the API gives no idempotency key for: pass a
   * number only when sending the same create twice is harmless to you.
   */
  maxRetries?: number | undefined;
}

export interface TransportOptions {
  /** Sends one attempt (the auth fetch: token injection, 401 replay). */
  fetch: (url: string, init: RequestInit) => Promise<Response>;
  timeoutMs: number;
  maxRetries: number;
  now: () => number;
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  random: () => number;
  logger?: PartnerLogger | undefined;
}

/** Sends a request with timeouts, retries and error classification. */
export type Transport = (request: Request, call?: CallOptions) => Promise<Response>;

const attemptsMade = new WeakMap<Response, { attempts: number; retryAfterMs: number | undefined }>();

/** How many attempts the transport made for `response`, and the wait the server last asked for. */
export function attemptsOf(response: Response): { attempts: number; retryAfterMs: number | undefined } {
  return attemptsMade.get(response) ?? { attempts: 1, retryAfterMs: undefined };
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

const neverAborted = new AbortController().signal;

export function createTransport(options: TransportOptions): Transport {
  const { logger } = options;
  return async function send(request, call = {}) {
    const userSignal = call.signal;
    const timeoutMs = call.timeoutMs ?? options.timeoutMs;
    const maxRetries = call.maxRetries ?? (request.method === 'GET' ? options.maxRetries : 0);
    const url = new URL(request.url);
    const label = `${request.method} ${url.pathname}`;
    // Buffered once so that every attempt (and the auth fetch's 401 replay) sends the same bytes.
    const body = request.body === null ? undefined : await request.arrayBuffer();

    for (let attempt = 1; ; attempt++) {
      if (userSignal?.aborted) throw abortError(userSignal);
      const timeout = new AbortController();
      const timer = setTimeout(
        () => timeout.abort(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError')),
        timeoutMs,
      );
      // AbortSignal.any only when the caller gave a signal: linking signals has a cost on every call.
      const signal = userSignal ? AbortSignal.any([userSignal, timeout.signal]) : timeout.signal;
      const started = options.now();
      let failure: PartnerApiError;
      try {
        // One Request is built downstream from these (each construction with a signal costs).
        const answer = await options.fetch(request.url, {
          method: request.method,
          headers: request.headers,
          redirect: request.redirect,
          signal,
          ...(body === undefined ? {} : { body }),
        });
        // The timeout covers the wait for the answer's head; the body then streams under the caller's signal.
        clearTimeout(timer);
        const waitAsked = retryAfterMs(answer.headers, options.now());
        attemptsMade.set(answer, { attempts: attempt, retryAfterMs: waitAsked });
        logger?.debug?.(`${label} → ${answer.status}`, {
          attempt,
          ms: options.now() - started,
          requestId: answer.headers.get('x-request-id') ?? answer.headers.get('request-id') ?? undefined,
        });
        if (!isRetryableStatus(answer.status) || attempt > maxRetries) return answer;
        if (waitAsked !== undefined && waitAsked > retryPolicy.maxRetryAfterMs) {
          // Waiting longer than a minute inside a call helps nobody: report it and let the caller decide.
          logger?.warn?.(`${label} → ${answer.status}: not retried, the server asks to wait ${waitAsked} ms`);
          return answer;
        }
        const delay = waitAsked ?? backoffMs(attempt - 1, options.random());
        logger?.warn?.(
          `${label} → ${answer.status}; retry ${attempt} of ${maxRetries} in ${Math.round(delay)} ms`,
        );
        await discard(answer);
        await pause(delay, userSignal);
        continue;
      } catch (error) {
        clearTimeout(timer);
        if (userSignal?.aborted) throw abortError(userSignal);
        if (error instanceof PartnerApiError) throw error;
        if (timeout.signal.aborted) {
          failure = new APITimeoutError(
            `The partner API did not answer ${label} within ${timeoutMs} ms (per attempt, ${attempt} attempt${attempt > 1 ? 's' : ''}). Raise timeoutMs or retry later.`,
            { attempts: attempt, cause: error },
          );
        } else if (isNetworkError(error)) {
          const reason = networkReason(error);
          failure = new APIConnectionError(
            `Could not reach the partner API at ${url.origin} for ${label} (${reason}; ${attempt} attempt${attempt > 1 ? 's' : ''}). Check baseUrl (PARTNER_BASE_URL) and the network.`,
            { attempts: attempt, cause: error },
          );
        } else {
          // Errors of the auth layer (ScopeNotGrantedError, TokenRequestError…) and anything else pass through.
          throw error;
        }
      }
      if (attempt > maxRetries) throw failure;
      const delay = backoffMs(attempt - 1, options.random());
      logger?.warn?.(
        `${label}: ${failure.code}; retry ${attempt} of ${maxRetries} in ${Math.round(delay)} ms`,
      );
      await pause(delay, userSignal);
    }
  };

  async function pause(ms: number, signal: AbortSignal | undefined) {
    try {
      await options.sleep(ms, signal ?? neverAborted);
    } catch (error) {
      if (signal?.aborted) throw abortError(signal);
      throw error;
    }
  }
}

async function discard(response: Response): Promise<void> {
  try {
    await response.body?.cancel();
  } catch {
    // nothing left to free
  }
}

function abortError(signal: AbortSignal): APIUserAbortError {
  return new APIUserAbortError(undefined, { cause: signal.reason });
}

// undici rejects with `TypeError: fetch failed` and the socket error as cause.
function isNetworkError(error: unknown): boolean {
  return error instanceof TypeError;
}

function networkReason(error: unknown): string {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return typeof code === 'string' ? `${code}: ${cause.message}` : cause.message;
  }
  return String(cause);
}
