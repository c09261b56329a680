import { readCapped } from '@partner-lending/mock';
import { ConformanceError } from '../../errors.js';
import { cite } from './evidence.js';
import type { Exchange, ProbeRequest } from './exchange.js';

export type { Exchange, ProbeRequest } from './exchange.js';

export interface HttpProbeOptions {
  fetch?: typeof globalThis.fetch;
  /** Time limit of one request, default 10 000 ms. */
  requestTimeoutMs?: number;
  /** Called with every exchange (the spec-conformance checks look at all of them). */
  onExchange?: (exchange: Exchange) => void;
  /** Monotonic clock in ms for timings, default performance.now. */
  now?: () => number;
  /** Longest body read of an answer, in bytes; the rest is not read (an endless body ends there). Default 1 MiB. */
  maxBodyBytes?: number;
  /** Answers 429 are retried this many times after `Retry-After` (capped at 10 s). Default 3. */
  maxRetriesOn429?: number;
  sleep?: (ms: number) => Promise<void>;
  /**
   * Asked before every request: a reason not to send it (the write guard: a body to a create endpoint
   * without --allow-writes). The request is then never sent and `send` throws ERR_WRITE_GUARD.
   */
  guard?: (request: ProbeRequest) => string | undefined;
}

/** Default cap of a body the suite reads: 1 MiB (the answers it judges are small; an endless one stops here). */
export const defaultMaxBodyBytes = 1024 * 1024;

/** Headers a probe always sends unless the request names them. */
const defaultHeaders = { accept: 'application/json' };

function encodeForm(form: ReadonlyArray<readonly [string, string]>): string {
  const params = new URLSearchParams();
  for (const [name, value] of form) params.append(name, value);
  return params.toString();
}

/** Describes a failed fetch in one line: the code of the cause when there is one (ECONNREFUSED…). */
export function describeNetworkError(error: unknown): string {
  if (error instanceof Error) {
    if (error.name === 'TimeoutError' || error.name === 'AbortError') return 'the request timed out';
    const cause = (error as { cause?: unknown }).cause;
    if (cause instanceof Error) {
      const code = (cause as { code?: unknown }).code;
      return typeof code === 'string' ? `${cause.message.split('\n')[0]} (${code})` : cause.message;
    }
    return error.message;
  }
  return String(error);
}

/**
 * The HTTP layer of the suite: sends a request with an injected fetch, never follows redirects
 * (a 3xx is an answer to judge, not to follow), reads the whole body and reports every exchange.
 */
export class HttpProbe {
  readonly #fetch: typeof globalThis.fetch;
  readonly #timeoutMs: number;
  readonly #onExchange: ((exchange: Exchange) => void) | undefined;
  readonly #now: () => number;
  readonly #maxRetries: number;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #guard: ((request: ProbeRequest) => string | undefined) | undefined;
  readonly #maxBodyBytes: number;

  constructor(options: HttpProbeOptions = {}) {
    this.#maxBodyBytes = options.maxBodyBytes ?? defaultMaxBodyBytes;
    this.#guard = options.guard;
    this.#maxRetries = options.maxRetriesOn429 ?? 3;
    this.#sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#timeoutMs = options.requestTimeoutMs ?? 10_000;
    this.#onExchange = options.onExchange;
    this.#now = options.now ?? (() => performance.now());
  }

  /**
   * Sends `request`; throws ConformanceError ERR_NETWORK when no HTTP answer came back. A 429 (a real
   * target rate-limiting the suite's bursts) is retried after its Retry-After; only the last answer counts.
   */
  async send(request: ProbeRequest): Promise<Exchange> {
    const refusal = this.#guard?.(request);
    if (refusal !== undefined) throw new ConformanceError('ERR_WRITE_GUARD', refusal);
    for (let attempt = 0; ; attempt += 1) {
      const exchange = await this.#sendOnce(request);
      if (exchange.status !== 429 || attempt >= this.#maxRetries) {
        this.#onExchange?.(exchange);
        cite(exchange);
        return exchange;
      }
      const seconds = Number(exchange.headers.get('retry-after'));
      await this.#sleep(
        Math.min(10_000, Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 1000 * 2 ** attempt),
      );
    }
  }

  async #sendOnce(request: ProbeRequest): Promise<Exchange> {
    const headers: Record<string, string> = { ...defaultHeaders };
    for (const [name, value] of Object.entries(request.headers ?? {})) headers[name.toLowerCase()] = value;
    let body: string | undefined;
    if (request.form !== undefined) {
      body = encodeForm(request.form);
      headers['content-type'] ??= 'application/x-www-form-urlencoded';
    } else if (request.json !== undefined) {
      body = JSON.stringify(request.json);
      headers['content-type'] ??= 'application/json';
    } else if (request.body !== undefined) body = request.body;
    const started = this.#now();
    let response: Response;
    let text: string;
    let truncatedAt: number | undefined;
    try {
      response = await this.#fetch(request.url, {
        method: request.method,
        headers,
        redirect: 'manual',
        signal: AbortSignal.timeout(this.#timeoutMs),
        ...(body === undefined ? {} : { body }),
      });
      ({ text, truncatedAt } = await readCapped(response, this.#maxBodyBytes, { over: 'truncate' }));
    } catch (error) {
      throw new ConformanceError(
        'ERR_NETWORK',
        `${request.method} ${new URL(request.url).origin} failed: ${describeNetworkError(error)}`,
        { cause: error },
      );
    }
    let json: unknown;
    if (text.length > 0 && truncatedAt === undefined) {
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
    }
    const exchange: Exchange = {
      request: { ...request, headers },
      status: response.status,
      headers: response.headers,
      text,
      json,
      ...(truncatedAt !== undefined && { truncatedAt }),
      durationMs: this.#now() - started,
    };
    return exchange;
  }
}

/** The JSON body as a plain object, or undefined. */
export function jsonObject(exchange: Exchange): Record<string, unknown> | undefined {
  const { json } = exchange;
  return typeof json === 'object' && json !== null && !Array.isArray(json)
    ? (json as Record<string, unknown>)
    : undefined;
}

/** The `error` field of an OAuth / RFC 6750 error body, if any. */
export function errorCodeOf(exchange: Exchange): string | undefined {
  const error = jsonObject(exchange)?.error;
  return typeof error === 'string' ? error : undefined;
}
