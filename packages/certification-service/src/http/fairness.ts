import type { IncomingMessage, ServerResponse } from 'node:http';
import { notePartner } from '../observability/requests.js';
import { hashSecret } from '../secrets.js';

/** How much of the API one partner may take at once, so that no partner slows another. */
export interface FairnessLimits {
  /** API requests one partner may have in flight at once (429 with Retry-After past it). Default 8. */
  apiConcurrency: number;
  /** API requests per second one partner may make, sustained; bursts of twice as many pass. Default 20. */
  apiRequestsPerSecond: number;
  /** Run creations and finishes (the costly calls: a key, a judgement) one partner may have in flight at once. Default 4. */
  createConcurrency: number;
  /**
   * Seconds an instance remembers which partner an API key is (and that a key is no partner's), so that
   * a flood costs no database read per request: a key removed or replaced in the database is refused
   * at most this long later. 0 reads the database on every request. Default 10. A key in use in the
   * second half of that time is read again in the background, so that a flood never finds it forgotten.
   */
  apiKeyCacheSeconds: number;
  /**
   * Milliseconds the API's door holds a refusal (429, or 401 for a key remembered as no partner's)
   * before sending it, so that a client that sends again as soon as it is refused sends at most one
   * request per held place per this time: a closed loop of 200 requests makes 200 per second, not
   * thousands. `Retry-After` counts from the answer. 0 answers at once. Default 1000.
   */
  refusalHoldMs: number;
  /** Refusals held at once, over all partners; past it, refusals are answered at once. Default 1000. */
  maxHeldRefusals: number;
}

export const defaultFairnessLimits: FairnessLimits = {
  apiConcurrency: 8,
  apiRequestsPerSecond: 20,
  createConcurrency: 4,
  apiKeyCacheSeconds: 10,
  refusalHoldMs: 1000,
  maxHeldRefusals: 1000,
};

/** Admitted: call `release` when the request is answered. Refused: why, and when to retry. */
export type Admission = { release(): void } | { refused: string; retryAfterSeconds: number };

/**
 * Per-partner admission, in memory and O(1) per request (checked before any other work): a token
 * bucket for the rate and counters for requests in flight. Per instance: behind a load balancer with N
 * instances a partner gets up to N times these.
 */
export function partnerLimiter(
  limits: Pick<FairnessLimits, 'apiConcurrency' | 'apiRequestsPerSecond' | 'createConcurrency'> &
    Partial<Pick<FairnessLimits, 'refusalHoldMs' | 'maxHeldRefusals'>>,
  now: () => number = Date.now,
) {
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
    /** How the door holds its refusals (see `refusalHoldMs`). */
    hold: {
      holdMs: Math.max(0, limits.refusalHoldMs ?? 0),
      max: Math.max(0, limits.maxHeldRefusals ?? defaultFairnessLimits.maxHeldRefusals),
    },
    /** Any API request of the partner. */
    api(partnerId: string): Admission {
      forget();
      const wait = take(partnerId);
      if (wait > 0)
        return {
          refused: `this partner sent more than ${limits.apiRequestsPerSecond} requests per second (bursts of ${burst}): wait the seconds Retry-After gives before sending again`,
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

/**
 * Which partner an API key (its SHA-256) is, remembered `ttlMs`: known keys and unknown ones apart
 * (at most `max` each, the oldest forgotten first), so that a flood of made-up keys cannot push the
 * real ones out. One read at a time per key: a wave of requests with a key not remembered makes one
 * read, not one each.
 */
export function partnerKeys(
  lookup: (keyHash: string) => Promise<string | undefined>,
  options: { ttlMs: number; max?: number; now?: () => number },
) {
  const { ttlMs, max = 10_000, now = Date.now } = options;
  const known = new Map<string, { partnerId: string; until: number }>();
  const unknown = new Map<string, number>();
  const reading = new Map<string, Promise<string | undefined>>();
  const remember = <V>(map: Map<string, V>, keyHash: string, value: V) => {
    map.delete(keyHash);
    if (map.size >= max) map.delete(map.keys().next().value!);
    map.set(keyHash, value);
  };
  /** Reads the key again in the background when it is in use in the second half of its time. */
  const refreshAhead = (keyHash: string, until: number, at: number) => {
    if (until - at < ttlMs / 2 && !reading.has(keyHash)) void read(keyHash).catch(() => undefined);
  };
  /** The partner (a string), no partner (null), or not remembered (undefined): no read. */
  const cached = (keyHash: string): string | null | undefined => {
    const at = now();
    const hit = known.get(keyHash);
    if (hit && hit.until > at) {
      refreshAhead(keyHash, hit.until, at);
      return hit.partnerId;
    }
    const miss = unknown.get(keyHash);
    if (miss !== undefined && miss > at) {
      refreshAhead(keyHash, miss, at);
      return null;
    }
    return undefined;
  };
  /** One read of the key at a time; what it finds is remembered `ttlMs` from its end. */
  const read = (keyHash: string): Promise<string | undefined> => {
    let pending = reading.get(keyHash);
    if (!pending) {
      pending = lookup(keyHash)
        .then((partnerId) => {
          if (ttlMs > 0) {
            const until = now() + ttlMs;
            if (partnerId === undefined) {
              known.delete(keyHash);
              remember(unknown, keyHash, until);
            } else {
              unknown.delete(keyHash);
              remember(known, keyHash, { partnerId, until });
            }
          }
          return partnerId;
        })
        .finally(() => reading.delete(keyHash));
      reading.set(keyHash, pending);
    }
    return pending;
  };
  return {
    cached,
    /** The partner of the key, read from the database when not remembered. */
    resolve(keyHash: string): Promise<string | undefined> {
      const hit = cached(keyHash);
      if (hit !== undefined) return Promise.resolve(hit ?? undefined);
      return read(keyHash);
    },
  };
}

export type PartnerKeys = ReturnType<typeof partnerKeys>;

const bearer = /^bearer +(\S+)$/i;
/** The routes that cost a key or a judgement: limited by `createConcurrency` on top of the rest. */
const costly = /^\/api\/runs(?:\/[^/]+\/finish)?$/;

/** A refusal of the API, as the problem (RFC 9457) the answer carries. */
export interface ApiRefusal {
  status: 401 | 429;
  title: string;
  detail: string;
  headers: Record<string, string>;
}

export const unknownKey = (): ApiRefusal => ({
  status: 401,
  title: 'Unknown API key',
  detail: 'this API key is not one the vendor issued (or it was replaced)',
  headers: { 'www-authenticate': 'Bearer realm="partner-certification", error="invalid_token"' },
});

const tooMany = (refusal: { refused: string; retryAfterSeconds: number }): ApiRefusal => ({
  status: 429,
  title: 'Too many requests',
  detail: refusal.refused,
  headers: { 'retry-after': String(refusal.retryAfterSeconds) },
});

/**
 * The partner API's door, before any other work of a request (no body read, no routing, no database
 * when the key is remembered): who the partner is, and whether its share lets the request in. A
 * request it refuses is answered on the spot from the HTTP server's handler, so that a partner's flood
 * of refused requests costs the thread that serves everyone as little as can be.
 */
export function apiGate(keys: PartnerKeys, limiter: PartnerLimiter) {
  const admitted = new WeakMap<IncomingMessage, string>();
  const held = refusalHold(limiter.hold);

  /** Admits a request of `partnerId` (its places freed when its answer is done), or says why not. */
  const admit = (
    partnerId: string,
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
    path: string,
  ): ApiRefusal | undefined => {
    const api = limiter.api(partnerId);
    if ('refused' in api) return tooMany(api);
    const create = method === 'POST' && costly.test(path) ? limiter.create(partnerId) : undefined;
    if (create && 'refused' in create) {
      api.release();
      return tooMany(create);
    }
    admitted.set(req, partnerId);
    res.once('close', () => {
      api.release();
      create?.release();
    });
    return undefined;
  };

  return {
    admit,
    /** The partner a request was admitted as, by `screen` or `admit`. */
    admittedAs: (req: IncomingMessage | undefined): string | undefined =>
      req ? admitted.get(req) : undefined,
    /**
     * Screens a request of the API at once when its key is remembered: refused (answered here, true),
     * or admitted (false: the routes serve it). Not remembered, or no key: false, and the routes look
     * it up.
     */
    screen(req: IncomingMessage, res: ServerResponse, path: string): boolean {
      const match = bearer.exec(req.headers.authorization ?? '');
      if (!match) return false;
      const partnerId = keys.cached(hashSecret(match[1]!));
      if (partnerId === undefined) return false;
      const refusal = partnerId === null ? unknownKey() : admit(partnerId, req, res, req.method ?? '', path);
      if (!refusal) return false;
      if (partnerId !== null) notePartner(req, partnerId); // for the request's log line
      held.answer(req, res, refusal);
      return true;
    },
    /** Refusals held now (see `refusalHoldMs`). */
    held: () => held.size(),
    bearer,
  };
}

/**
 * The door's refusals, each held `holdMs` before it is sent (its body read and dropped at once), at
 * most `max` at a time (past it, answered at once), sent in the order refused, at most 64 in one turn
 * of the event loop, with `Connection: close`. A client that closes its connection meanwhile is
 * forgotten. `Retry-After` is counted from the answer: the seconds left of the wait the refusal named,
 * at least 1.
 */
export function refusalHold(options: { holdMs: number; max: number }, now: () => number = Date.now) {
  type Held = { req: IncomingMessage; res: ServerResponse; refusal: ApiRefusal; at: number };
  let queue: Held[] = [];
  let head = 0;
  let timer: NodeJS.Timeout | undefined;
  const size = () => queue.length - head;
  const send = ({ req, res, refusal, at }: Held) => {
    if (res.destroyed || res.writableEnded) return;
    const retryAfter = refusal.headers['retry-after'];
    const headers =
      retryAfter === undefined
        ? refusal.headers
        : {
            ...refusal.headers,
            'retry-after': String(Math.max(1, Math.ceil(Number(retryAfter) - (now() - at) / 1000))),
          };
    // Its connection is closed: a client over its share opens a new one to send again, accepted in
    // turn with every other client's, so that a wave of its requests no longer lands all at once.
    answerRefusal(req, res, { ...refusal, headers: { ...headers, connection: 'close' } });
  };
  const release = () => {
    timer = undefined;
    const at = now();
    for (let sent = 0; sent < 64 && size() > 0 && queue[head]!.at + options.holdMs <= at; sent += 1) {
      const next = queue[head]!;
      queue[head] = undefined as never;
      head += 1;
      send(next);
    }
    if (head > 1024 && head * 2 > queue.length) {
      queue = queue.slice(head);
      head = 0;
    }
    schedule();
  };
  const schedule = () => {
    if (timer || size() === 0) return;
    timer = setTimeout(release, Math.max(0, queue[head]!.at + options.holdMs - now()));
    timer.unref();
  };
  return {
    size,
    answer(req: IncomingMessage, res: ServerResponse, refusal: ApiRefusal): void {
      if (options.holdMs <= 0 || size() >= options.max) {
        answerRefusal(req, res, refusal);
        return;
      }
      req.resume(); // the body is dropped as it comes
      queue.push({ req, res, refusal, at: now() });
      schedule();
    },
  };
}

export type ApiGate = ReturnType<typeof apiGate>;

/** Writes a refusal as the routes would (problem JSON, the service's security headers), unread body dropped. */
function answerRefusal(req: IncomingMessage, res: ServerResponse, refusal: ApiRefusal): void {
  const body = JSON.stringify({
    type: 'about:blank',
    title: refusal.title,
    status: refusal.status,
    detail: refusal.detail,
  });
  req.resume();
  res.writeHead(refusal.status, {
    'content-type': 'application/problem+json',
    'cache-control': 'no-store',
    ...refusal.headers,
    'content-length': Buffer.byteLength(body),
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  });
  res.end(body);
}
