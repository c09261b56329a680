/**
 * Retry timing for the token endpoint: exponential backoff with full jitter (every retry waits a
 * random time between 0 and the capped exponential bound, so a fleet that failed together does not
 * retry together) and the server's `Retry-After` (RFC 9110 §10.2.3) when it gives one.
 */

export interface RetryPolicy {
  /** Attempts in total, the first included. */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** Longest `Retry-After` honoured; longer values are cut to this. */
  maxRetryAfterMs: number;
}

export const defaultRetryPolicy: RetryPolicy = {
  maxAttempts: 3,
  baseDelayMs: 200,
  maxDelayMs: 5_000,
  maxRetryAfterMs: 60_000,
};

/** Full-jitter delay before retry number `retry` (1 for the first retry). */
export function backoffDelay(retry: number, policy: RetryPolicy, random: () => number): number {
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
