/** How much of the API one partner may take at once, so that no partner slows another. */
export interface FairnessLimits {
  /** API requests one partner may have in flight at once (429 with Retry-After past it). Default 8. */
  apiConcurrency: number;
  /** API requests per second one partner may make, sustained; bursts of twice as many pass. Default 20. */
  apiRequestsPerSecond: number;
  /** Run creations and finishes (the costly calls: a key, a judgement) one partner may have in flight at once. Default 2. */
  createConcurrency: number;
}

export const defaultFairnessLimits: FairnessLimits = {
  apiConcurrency: 8,
  apiRequestsPerSecond: 20,
  createConcurrency: 4,
};

/** Admitted: call `release` when the request is answered. Refused: why, and when to retry. */
export type Admission = { release(): void } | { refused: string; retryAfterSeconds: number };

/**
 * Per-partner admission, in memory and O(1) per request (checked before any other work): a token
 * bucket for the rate and counters for requests in flight. Per instance: behind a load balancer with N
 * instances a partner gets up to N times these.
 */
export function partnerLimiter(limits: FairnessLimits, now: () => number = Date.now) {
  const burst = limits.apiRequestsPerSecond * 2;
  const buckets = new Map<string, { tokens: number; at: number }>();
  const flying = new Map<string, number>();
  const creating = new Map<string, number>();

  const take = (partnerId: string): number => {
    const at = now();
    const bucket = buckets.get(partnerId) ?? { tokens: burst, at };
    bucket.tokens = Math.min(burst, bucket.tokens + ((at - bucket.at) / 1000) * limits.apiRequestsPerSecond);
    bucket.at = at;
    buckets.set(partnerId, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / limits.apiRequestsPerSecond));
  };
  // Buckets that have refilled are forgotten, so the map holds only partners active lately.
  const forget = () => {
    if (buckets.size < 10_000) return;
    const at = now();
    for (const [id, bucket] of buckets)
      if (bucket.tokens + ((at - bucket.at) / 1000) * limits.apiRequestsPerSecond >= burst && !flying.has(id))
        buckets.delete(id);
  };

  const counted = (map: Map<string, number>, partnerId: string, max: number, what: string): Admission => {
    const count = map.get(partnerId) ?? 0;
    if (count >= max)
      return {
        refused: `this partner already has ${count} ${what} in flight (at most ${max}): wait for an answer before sending another`,
        retryAfterSeconds: 1,
      };
    map.set(partnerId, count + 1);
    let released = false;
    return {
      release() {
        if (released) return;
        released = true;
        const left = (map.get(partnerId) ?? 1) - 1;
        if (left <= 0) map.delete(partnerId);
        else map.set(partnerId, left);
      },
    };
  };

  return {
    /** Any API request of the partner. */
    api(partnerId: string): Admission {
      forget();
      const wait = take(partnerId);
      if (wait > 0)
        return {
          refused: `this partner sent more than ${limits.apiRequestsPerSecond} requests per second (bursts of ${burst}); retry in ${wait} s`,
          retryAfterSeconds: wait,
        };
      return counted(flying, partnerId, limits.apiConcurrency, 'API requests');
    },
    /** A run creation or finish of the partner (on top of `api`). */
    create(partnerId: string): Admission {
      return counted(creating, partnerId, limits.createConcurrency, 'run creations or finishes');
    },
  };
}

export type PartnerLimiter = ReturnType<typeof partnerLimiter>;
