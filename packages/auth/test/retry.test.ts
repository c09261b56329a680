import { describe, expect, it } from 'vitest';
import { backoffDelay, defaultRetryPolicy, isRetryableStatus, parseRetryAfter } from '../src/retry.js';

describe('backoffDelay (full jitter)', () => {
  it('draws between 0 and min(max, base × 2^(retry-1))', () => {
    const policy = { ...defaultRetryPolicy, baseDelayMs: 100, maxDelayMs: 1000 };
    expect([1, 2, 3, 4, 5].map((n) => backoffDelay(n, policy, () => 0.5))).toEqual([50, 100, 200, 400, 500]);
    expect(backoffDelay(3, policy, () => 0)).toBe(0);
  });
});

describe('isRetryableStatus', () => {
  it('retries 408, 429 and 5xx only', () => {
    expect([408, 429, 500, 502, 503, 504, 599].every(isRetryableStatus)).toBe(true);
    expect([400, 401, 403, 404, 409, 422, 302, 200].some(isRetryableStatus)).toBe(false);
  });
});

describe('parseRetryAfter (RFC 9110 §10.2.3)', () => {
  const now = Date.UTC(2026, 0, 1, 12, 0, 0);
  it('reads delay-seconds', () => {
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
  });
  it('reads an HTTP date, never negative', () => {
    expect(parseRetryAfter('Thu, 01 Jan 2026 12:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 11:00:00 GMT', now)).toBe(0);
  });
  it('ignores absent and malformed values', () => {
    expect(parseRetryAfter(null, now)).toBeUndefined();
    expect(parseRetryAfter('-5', now)).toBeUndefined();
    expect(parseRetryAfter('1.5', now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('Thu, 99 Foo 2026 GMT', now)).toBeUndefined();
  });
});
