/** Backoff of the retries: 0.5 s doubling to an 8 s cap, up to 25 % jitter below it; server waits up to 60 s. */
export const retryPolicy = {
  initialDelayMs: 500,
  maxDelayMs: 8_000,
  jitterRatio: 0.25,
  maxRetryAfterMs: 60_000,
} as const;

/** Statuses a GET is retried on: 408, 429 and 5xx. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * The wait the server asks for: `retry-after-ms` (milliseconds, as the Stainless SDKs send), else
 * `Retry-After` (seconds or an HTTP date, RFC 9110 §10.2.3). Undefined when absent or unreadable.
 */
export function retryAfterMs(headers: Headers, now: number): number | undefined {
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '') {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const after = headers.get('retry-after')?.trim();
  if (!after) return undefined;
  if (/^\d+(\.\d+)?$/.test(after)) return Number(after) * 1000;
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Delay before retry number `retry` (0 for the first retry); `random` in [0, 1). */
export function backoffMs(retry: number, random: number): number {
  const base = Math.min(retryPolicy.initialDelayMs * 2 ** retry, retryPolicy.maxDelayMs);
  return base * (1 - random * retryPolicy.jitterRatio);
}
