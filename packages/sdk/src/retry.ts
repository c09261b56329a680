import {
  backoffDelay,
  isRetryableStatus,
  type RetryPolicy,
  retryAfterFromHeaders,
} from '@partner-lending/auth';

/**
 * The API calls' retry timing: the toolkit's one policy (full-jitter exponential backoff, the server's
 * `retry-after-ms` / `Retry-After` honoured up to a cap), shared with the token provider, with the
 * SDK's own numbers: a bound of 0.5 s doubling to 8 s; server waits up to 60 s.
 */
export const retryPolicy: Readonly<Omit<RetryPolicy, 'maxRetries'>> = Object.freeze({
  baseDelayMs: 500,
  maxDelayMs: 8_000,
  maxRetryAfterMs: 60_000,
});

export { isRetryableStatus };

/** The wait the server asks for, in ms (`retry-after-ms`, else `Retry-After`); undefined when absent. */
export function retryAfterMs(headers: Headers, now: number): number | undefined {
  return retryAfterFromHeaders(headers, now);
}

/** Delay before retry number `retry` (1 for the first retry); `random` in [0, 1). */
export function backoffMs(retry: number, random: () => number): number {
  return backoffDelay(retry, retryPolicy, random);
}
