import { CommandTimeout, type Connection, withDeadline } from './connection.js';
import type { RedisClient } from './options.js';

/** A notice of the lock holder, or a wake-up of this process's own. */
export type Notice =
  | { kind: 'ok' | 'failed'; lockId: string; code: string; waitMs: number }
  | { kind: 'timer' | 'down' };

/**
 * The wire format of a notice, written here and parsed below: `tag|ok|lockId||0` when the holder wrote
 * a token, `tag|failed|lockId|CODE|waitMs` when its request failed (waitMs: a throttle's Retry-After).
 */
export function formatNotice(
  tag: string,
  kind: 'ok' | 'failed',
  lockId: string,
  code = '',
  waitMs = 0,
): string {
  return `${tag}|${kind}|${lockId}|${code.replace(/[^A-Za-z0-9_]/g, '')}|${Math.max(0, Math.ceil(waitMs))}`;
}

/** A published notice read back: its tag and what it says, or undefined for anything else. */
export function parseNotice(message: string): { tag: string; notice: Notice } | undefined {
  const [tag = '', kind, lockId = '', code = '', wait = ''] = message.split('|');
  if (kind !== 'ok' && kind !== 'failed') return undefined;
  return { tag, notice: { kind, lockId, code, waitMs: Number(wait) || 0 } };
}

/** Listens for one tag's notices from now on. */
export interface NoticeListener {
  /** Forgets the notices queued so far. */
  clear(): void;
  /** The next notice, or `{ kind: 'timer' }` after `ms`. */
  next(ms: number): Promise<Notice>;
  stop(): void;
}

/**
 * The notices of the fleet's lock holders, on the notice channel (pub/sub): one subscription per
 * store, on a connection of its own for a single node, on the cluster's or sentinel's own pub/sub
 * connection else.
 */
export class Notices {
  readonly #redis: Connection;
  readonly #channel: string;
  readonly #commandTimeoutMs: number;
  readonly #connectTimeoutMs: number;
  readonly #waiters = new Map<string, Set<(notice: Notice) => void>>();
  subscriber: RedisClient | undefined;
  /** The one subscription of this store, pending or done; reset only when it fails. */
  subscription: Promise<void> | undefined;

  constructor(redis: Connection, channel: string, commandTimeoutMs: number, connectTimeoutMs: number) {
    this.#redis = redis;
    this.#channel = channel;
    this.#commandTimeoutMs = commandTimeoutMs;
    this.#connectTimeoutMs = connectTimeoutMs;
  }

  /** Wakes every waiter of this process (Redis skipped, the notice connection lost, close()). */
  wakeAll(notice: Notice): void {
    for (const set of this.#waiters.values()) for (const wake of set) wake(notice);
  }

  readonly onMessage = (message: string): void => {
    const parsed = parseNotice(message);
    if (!parsed) return;
    const set = this.#waiters.get(parsed.tag);
    if (!set) return;
    for (const wake of set) wake(parsed.notice);
  };

  /**
   * Subscribes to the notice channel once. Bounded: a subscription that hangs fails this call (and
   * skips Redis) without being sent twice.
   */
  subscribe(): Promise<void> {
    const redis = this.#redis;
    const { client, kind, owned } = redis;
    const warm = kind !== 'client' && redis.everUp;
    // Sentinel, while the store serves a newly announced primary itself: notices come over its own
    // subscription there; the client's (node-redis moves it over once it is on that primary) is not waited for.
    if (this.subscription === undefined && redis.following) return Promise.resolve();
    if (this.subscription === undefined) {
      let target: RedisClient;
      if (kind === 'client') {
        if (this.subscriber === undefined) {
          const sub = client.duplicate(
            owned
              ? {}
              : {
                  disableOfflineQueue: true,
                  socket: { ...client.options?.socket, reconnectStrategy: redis.reconnectStrategy },
                },
          ) as RedisClient;
          sub.on('error', () => this.wakeAll({ kind: 'down' }));
          sub.on('end', () => this.wakeAll({ kind: 'down' }));
          sub.connect().catch(() => {});
          this.subscriber = sub;
        }
        target = this.subscriber;
      } else {
        target = client;
        this.subscriber = client;
      }
      const attempt = (async () => {
        // Only a cold start waits for the connection: a cluster's or sentinel's connection (the
        // application's) that was up once is not waited for again after an outage.
        if (!warm) await redis.waitFirstReady(target, kind === 'client' ? 'ready' : redis.readyEvent);
        if (!target.isReady) throw new Error('the notice connection is not up');
        await target.subscribe(this.#channel, this.onMessage);
      })();
      this.subscription = attempt;
      attempt.catch(() => {
        if (this.subscription === attempt) this.subscription = undefined;
      });
    }
    const ms =
      this.subscriber?.isReady || warm
        ? this.#commandTimeoutMs
        : this.#connectTimeoutMs + this.#commandTimeoutMs;
    return withDeadline(this.subscription, ms, 'SUBSCRIBE').catch((error: unknown) => {
      if (error instanceof CommandTimeout) redis.skip(`no answer to SUBSCRIBE within ${ms} ms`);
      throw error;
    });
  }

  /** Collects the notices for one tag from now on. */
  listen(tag: string): NoticeListener {
    const queue: Notice[] = [];
    let wake: ((notice: Notice) => void) | undefined;
    const onNotice = (notice: Notice) => {
      if (wake) wake(notice);
      else queue.push(notice);
    };
    let set = this.#waiters.get(tag);
    if (!set) {
      set = new Set();
      this.#waiters.set(tag, set);
    }
    set.add(onNotice);
    const waiters = this.#waiters;
    return {
      clear: () => {
        queue.length = 0;
      },
      next: (ms: number): Promise<Notice> => {
        const queued = queue.shift();
        if (queued) return Promise.resolve(queued);
        return new Promise<Notice>((resolve) => {
          const timer = setTimeout(() => finish({ kind: 'timer' }), Math.max(0, ms));
          const finish = (notice: Notice) => {
            clearTimeout(timer);
            wake = undefined;
            resolve(notice);
          };
          wake = finish;
        });
      },
      stop: () => {
        set.delete(onNotice);
        if (set.size === 0) waiters.delete(tag);
      },
    };
  }
}
