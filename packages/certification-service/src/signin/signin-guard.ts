import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context } from 'hono';
import type { Database } from '../db/database.js';
import { signInFailures } from '../observability/metrics.js';

/** How many failed sign-ins are tolerated before the next attempt is refused 429 with Retry-After. */
export interface SigninLimits {
  /** Failed sign-ins one client address may make in a burst. Default 10. */
  perAddressBurst: number;
  /** Then one more per this many seconds. Default 30 (2 a minute). */
  perAddressRefillSeconds: number;
  /** Failed sign-ins of all addresses together in a burst. Default 100. */
  overallBurst: number;
  /** Then one more per this many seconds. Default 1 (60 a minute). */
  overallRefillSeconds: number;
}

export const defaultSigninLimits: SigninLimits = {
  perAddressBurst: 10,
  perAddressRefillSeconds: 30,
  overallBurst: 100,
  overallRefillSeconds: 1,
};

/**
 * Slows credential guessing on `/signin`: failed sign-ins spend a budget per client address and one
 * overall (token buckets, in memory, per instance), and an attempt with no budget left is refused
 * before its credential is even looked at. Each failure and each refusal is counted in
 * `security_events`, aggregated by kind, address and minute — apart from the audit log, whose
 * decisions no flood can bury.
 */
export function signinGuard(
  db: Database,
  limits: SigninLimits,
  options: { trustForwardedFor: boolean; now?: () => number },
) {
  const now = options.now ?? Date.now;
  const buckets = new Map<string, { tokens: number; at: number }>();
  const level = (key: string, burst: number, refillSeconds: number) => {
    const at = now();
    const bucket = buckets.get(key) ?? { tokens: burst, at };
    bucket.tokens = Math.min(burst, bucket.tokens + (at - bucket.at) / 1000 / refillSeconds);
    bucket.at = at;
    buckets.set(key, bucket);
    return bucket;
  };
  const wait = (bucket: { tokens: number }, refillSeconds: number) =>
    Math.max(1, Math.ceil((1 - bucket.tokens) * refillSeconds));
  const forget = () => {
    if (buckets.size < 10_000) return;
    for (const [key, bucket] of buckets) if (bucket.tokens >= 1 && key !== '*') buckets.delete(key);
  };

  /** The client's address: the socket's, or — behind a proxy the operator trusts — the last X-Forwarded-For entry. */
  const addressOf = (c: Context): string => {
    if (options.trustForwardedFor) {
      const forwarded = c.req.header('x-forwarded-for')?.split(',').at(-1)?.trim();
      if (forwarded) return forwarded.slice(0, 64);
    }
    try {
      return getConnInfo(c).remote.address ?? 'unknown';
    } catch {
      return 'unknown';
    }
  };

  const record = (kind: 'signin.refused' | 'signin.throttled', source: string) => {
    signInFailures.inc({ reason: kind.slice('signin.'.length) });
    return db.query(
      `INSERT INTO security_events (kind, source, minute, count) VALUES ($1, $2, date_trunc('minute', now()), 1)
       ON CONFLICT (kind, source, minute) DO UPDATE SET count = security_events.count + 1, last_at = now()`,
      [kind, source],
    );
  };

  return {
    addressOf,
    /** Seconds to wait when this address (or everyone) has no failed sign-in left; 0 when it may try. */
    async throttled(address: string): Promise<number> {
      forget();
      const mine = level(address, limits.perAddressBurst, limits.perAddressRefillSeconds);
      const all = level('*', limits.overallBurst, limits.overallRefillSeconds);
      const seconds = Math.max(
        mine.tokens < 1 ? wait(mine, limits.perAddressRefillSeconds) : 0,
        all.tokens < 1 ? wait(all, limits.overallRefillSeconds) : 0,
      );
      if (seconds > 0) await record('signin.throttled', address);
      return seconds;
    },
    /** A sign-in failed: spends the address's and the overall budget, and is counted. */
    async failed(address: string): Promise<void> {
      level(address, limits.perAddressBurst, limits.perAddressRefillSeconds).tokens -= 1;
      level('*', limits.overallBurst, limits.overallRefillSeconds).tokens -= 1;
      await record('signin.refused', address);
    },
  };
}

export type SigninGuard = ReturnType<typeof signinGuard>;
