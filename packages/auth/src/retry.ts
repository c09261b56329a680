import { ConfigurationError } from './errors.js';

/**
 * Retry timing, shared by the token provider and @partner-lending/sdk: exponential backoff with full
 * jitter (every retry waits a random time between 0 and the capped exponential bound, so a fleet that
 * failed together does not retry together) and the server's `Retry-After` (RFC 9110 §10.2.3) when it
 * gives one. The option names are the same in both packages.
 */

/** Retry options, with the same names in the token provider (`retry`) and the SDK. */
export interface RetryOptions {
  /** Retries after the first attempt. */
  maxRetries?: number;
  /** Upper bound of the first retry's random delay; doubles with each retry. */
  baseDelayMs?: number;
  /** Cap of the backoff bound. */
  maxDelayMs?: number;
  /**
   * Longest `Retry-After` waited for before the next attempt. A longer one (or one ending past the
   * caller's deadline) is not waited for: the call fails at once and, in the token provider, token
   * requests fail fast with TokenThrottledError until it has passed (at most 1 hour).
   */
  maxRetryAfterMs?: number;
  /**
   * Attempts in total, the first included (`maxRetries + 1`).
   * @deprecated Use `maxRetries` (the name the SDK uses too).
   */
  maxAttempts?: number;
}

export interface RetryPolicy {
  /** Retries after the first attempt. */
  maxRetries: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** Longest `Retry-After` honoured. */
  maxRetryAfterMs: number;
}

/** The token provider's defaults. */
export const defaultRetryPolicy: Readonly<RetryPolicy> = Object.freeze({
  maxRetries: 2,
  baseDelayMs: 200,
  maxDelayMs: 5_000,
  maxRetryAfterMs: 60_000,
});

/**
 * A policy from options, each checked (a finite number ≥ 0; `maxRetries` a whole number), falling back
 * to `defaults`. `owner` prefixes the error message, e.g. `createTokenProvider: retry`.
 */
export function resolveRetryPolicy(
  options: RetryOptions | undefined,
  defaults: Readonly<RetryPolicy>,
  owner: string,
): RetryPolicy {
  const given = options ?? {};
  const number = (name: keyof RetryOptions, fallback: number, whole = false): number => {
    const value = given[name];
    if (value === undefined) return fallback;
    if (
      typeof value !== 'number' ||
      !Number.isFinite(value) ||
      value < 0 ||
      (whole && !Number.isInteger(value))
    ) {
      throw new ConfigurationError(
        `${owner}.${name} must be a ${whole ? 'whole' : 'finite'} number ≥ 0, got ${String(value)}.`,
      );
    }
    return value;
  };
  let maxRetries = number('maxRetries', defaults.maxRetries, true);
  if (given.maxRetries === undefined && given.maxAttempts !== undefined) {
    maxRetries = Math.max(0, number('maxAttempts', 1, true) - 1);
  }
  return {
    maxRetries,
    baseDelayMs: number('baseDelayMs', defaults.baseDelayMs),
    maxDelayMs: number('maxDelayMs', defaults.maxDelayMs),
    maxRetryAfterMs: number('maxRetryAfterMs', defaults.maxRetryAfterMs),
  };
}

/** Full-jitter delay before retry number `retry` (1 for the first retry). */
export function backoffDelay(
  retry: number,
  policy: Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs'>,
  random: () => number,
): number {
  const bound = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  return Math.floor(random() * bound);
}

/** Statuses worth another attempt: the request may succeed later without any change on our side. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || (status >= 500 && status <= 599);
}

/**
 * Milliseconds to wait from a `Retry-After` value: delay-seconds or an HTTP-date. Undefined when the
 * header is absent or malformed. Never negative.
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // IMF-fixdate and the obsolete formats all start with a day name and end in GMT.
  if (!/GMT$/.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/**
 * The wait an answer asks for: `retry-after-ms` (milliseconds, as the Stainless SDKs send), else
 * `Retry-After`. Undefined when neither is there or readable.
 */
export function retryAfterFromHeaders(headers: Headers, now: number): number | undefined {
  const ms = headers.get('retry-after-ms');
  if (ms !== null) {
    const value = Number(ms.trim());
    if (ms.trim() !== '' && Number.isFinite(value) && value >= 0) return value;
  }
  return parseRetryAfter(headers.get('retry-after'), now);
}
