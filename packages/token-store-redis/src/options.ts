import type { SingleFlightOptions, StoredToken, TokenStore } from '@partner-lending/auth';
import type { RedisClientType } from 'redis';
import { RedisTokenStoreError, type RedisTokenStoreErrorCode } from './errors.js';
import type { EncryptionKeyInput, UnreadableReason } from './token-cipher.js';

/**
 * A node-redis client (`createClient()` from `redis`), connected by the application. Any module,
 * script or RESP version set-up is accepted: the store only sends plain commands through it.
 */
// biome-ignore lint/suspicious/noExplicitAny: every generic set-up of the client is accepted.
export type RedisClient = RedisClientType<any, any, any, any, any>;

/** What the store uses of a client, a cluster or a sentinel set-up (any of their generic set-ups fits). */
export interface CommonRedis {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  // biome-ignore lint/suspicious/noExplicitAny: node-redis listener signatures vary by set-up.
  on(event: string, listener: (...args: any[]) => void): unknown;
  // biome-ignore lint/suspicious/noExplicitAny: node-redis listener signatures vary by set-up.
  off(event: string, listener: (...args: any[]) => void): unknown;
  // biome-ignore lint/suspicious/noExplicitAny: string or Buffer messages, by set-up.
  subscribe(channel: string, listener: (message: any) => void): Promise<unknown>;
  // biome-ignore lint/suspicious/noExplicitAny: string or Buffer messages, by set-up.
  unsubscribe(channel: string, listener: (message: any) => void): Promise<unknown>;
}

/**
 * A node-redis Redis Cluster client (`createCluster()` from `redis`), connected by the application.
 * Described by what the store uses, so that a cluster of any module or RESP set-up is accepted.
 */
export interface RedisCluster extends CommonRedis {
  readonly masters: unknown;
  readonly slots: unknown;
  sendCommand(
    firstKey: string | undefined,
    isReadonly: boolean | undefined,
    args: string[],
    options?: { timeout?: number },
  ): Promise<unknown>;
}

/** A node-redis Sentinel client (`createSentinel()` from `redis`), connected by the application. */
export interface RedisSentinel extends CommonRedis {
  getMasterNode(): unknown;
  sendCommand(
    isReadonly: boolean | undefined,
    args: string[],
    options?: { timeout?: number },
  ): Promise<unknown>;
}

/** What the store reads of the options given to `createSentinel` (see the `sentinel` option). */
export interface SentinelFollowOptions {
  /** The name the sentinels monitor: only its `+switch-master` is followed. */
  name?: string;
  /** The sentinels to watch if the client's own one fails. */
  sentinelRootNodes?: readonly { host: string; port: number }[];
  /** node-redis client options of the connection to a sentinel (credentials, TLS). */
  sentinelClientOptions?: object;
  /** node-redis client options of the connections to the new primary (credentials, TLS). */
  nodeClientOptions?: object;
  /** Addresses the sentinels announce → addresses to connect to, as in `createSentinel`. */
  nodeAddressMap?:
    | Record<string, { host: string; port: number }>
    | ((address: string) => { host: string; port: number } | undefined);
}

/** The Redis operation an event or error is about. */
export type RedisOperation = 'get' | 'set' | 'delete' | 'single-flight' | 'subscribe';

/**
 * What the store tells an `onEvent` hook. Never an access token, a ciphertext or the key: tokens are
 * named by `tag`, the digest in their Redis key.
 */
export type RedisTokenStoreEvent =
  /** No encryption key: tokens are stored in clear (reported once per store, warned once per process). */
  | { type: 'encryption-disabled' }
  /** Connected, or connected again after an outage. */
  | { type: 'redis-ready' }
  /** The connection was lost or could not be made; calls reject fast until `redis-ready`. */
  | { type: 'redis-down'; message: string }
  /** The store's own client schedules its next connection attempt. */
  | { type: 'redis-reconnecting'; attempt: number; delayMs: number }
  /**
   * A command got no answer within `commandTimeoutMs` (a hung server, a black-holed network) or the
   * connection failed: Redis is skipped for `skipMs` (jittered, doubling while it stays hung), then
   * one probe (PING) checks it; `redis-ready` follows when it answers.
   */
  | { type: 'redis-skipped'; skipMs: number; message: string }
  /** Redis refused the credentials (WRONGPASS/NOAUTH); the store retries, backing off up to 60 s. */
  | { type: 'redis-auth-failed'; message: string }
  /**
   * Sentinel: the store follows a primary the sentinels announced (`+switch-master`) until the Sentinel
   * client is on it, or could not (`message` says which, and why).
   */
  | { type: 'sentinel-watch'; message: string }
  /**
   * Cluster: a lost primary's slot was taken over before node-redis knew it; the store had node-redis
   * refresh its topology (or could not: `message` says which, and why).
   */
  | { type: 'cluster-refresh'; message: string }
  /** A call failed (the promise rejects with the same code). */
  | { type: 'redis-error'; operation: RedisOperation; code: RedisTokenStoreErrorCode; message: string }
  /** A stored entry could not be used and counted as a miss; a tampered or malformed one was deleted. */
  | { type: 'token-unreadable'; tag: string; reason: UnreadableReason }
  /** A token was not written because the stored one is newer. */
  | { type: 'write-skipped'; tag: string }
  /** This process took the lock and runs the token request for the fleet. */
  | { type: 'lock-acquired'; tag: string; takeover: boolean }
  /** Another process holds the lock: this one waits for its notice (at most `timeoutMs`). */
  | { type: 'lock-waiting'; tag: string; lockTtlMs: number };

/** Where Redis is: exactly one of `url` and `client`. */
export type RedisConnection =
  | {
      /** A Redis URL (`redis://[[user]:password@]host[:port][/db]`, `rediss://` for TLS); the store creates, connects and closes its client. */
      url: string | undefined;
      client?: never;
    }
  | {
      /**
       * A node-redis client the application created and connects (`await client.connect()`): a single
       * node (`createClient`), a Redis Cluster (`createCluster`) or a Sentinel set-up
       * (`createSentinel`). The store never closes it.
       */
      client: RedisClient | RedisCluster | RedisSentinel;
      url?: never;
    };

export type RedisTokenStoreOptions = RedisConnection & RedisTokenStoreSettings;

export interface RedisTokenStoreSettings {
  /** Prefix of every key and of the notice channel. Default `partner-lending:token-store:`. */
  namespace?: string;
  /**
   * AES-256-GCM key(s): 32 bytes, or a string of them in base64 or hex. An array rotates keys: the
   * first encrypts, all decrypt. Default: the `PARTNER_TOKEN_STORE_KEY` environment variable; without
   * either, tokens are stored in clear and a warning says so once.
   */
  encryptionKey?: EncryptionKeyInput | readonly EncryptionKeyInput[] | undefined;
  /**
   * Longest wait for one Redis command, with a timer of the store's own (it holds for a command already
   * written to a server that never answers): the call rejects with ERR_REDIS_UNAVAILABLE, and Redis is
   * skipped for a cool-down (see `skipMs`). Default 1 000.
   */
  commandTimeoutMs?: number;
  /**
   * After a command timed out or the connection failed, Redis is skipped (calls reject at once and the
   * provider serves from memory or asks the token endpoint itself) for between half and all of this,
   * at random, doubling while a probe (one PING) finds it still hung, up to 4 × skipMs. Default 1 000.
   */
  skipMs?: number;
  /** Longest wait for a connection; calls made before the first connection wait at most this long. Default 2 000. */
  connectTimeoutMs?: number;
  /** Cap of the reconnection backoff of a client the store created (it doubles from 100 ms, with jitter). Default 2 000. */
  maxReconnectDelayMs?: number;
  /**
   * The single-flight lock is taken for this long and renewed by its holder (a whole lease, every third
   * of it) while its token request runs, up to the flight's `timeoutMs`. A lock short of two thirds of
   * its lease by more than 500 ms missed a renewal (its holder died) and a waiting process takes it
   * over. Default 5 000.
   */
  lockLeaseMs?: number;
  /**
   * For a Sentinel client: how the store follows a failover itself. It subscribes to `+switch-master`
   * on a sentinel, connects to the announced primary (checking `ROLE`) and serves from it until the
   * Sentinel client is on it, which node-redis reaches 1–2 s later. Give it the object you passed to
   * `createSentinel` (it reads `name`, `sentinelRootNodes`, `sentinelClientOptions`, `nodeClientOptions`
   * and `nodeAddressMap`: credentials and TLS of its own connections); `false` leaves failovers to
   * node-redis. Default `{}`: the client's own sentinel, without credentials, and the switch away from
   * the primary the client was on.
   */
  sentinel?: SentinelFollowOptions | false;
  /** Observability hook (see RedisTokenStoreEvent). Default: none. */
  onEvent?: (event: RedisTokenStoreEvent) => void;
}

/** A TokenStore backed by Redis, with single flight across processes. */
export interface RedisTokenStore extends TokenStore {
  singleFlight(
    key: string,
    fetchToken: () => Promise<StoredToken>,
    options: SingleFlightOptions,
  ): Promise<StoredToken>;
  /** True when both connections (commands and notices) are up. */
  readonly isReady: boolean;
  /** Closes the connections the store opened (its client from `url`, its notice subscriber). */
  close(): Promise<void>;
}

/** A number option that must be > 0 (an ERR_INVALID_OPTION error naming it), or its default. */
export function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new RedisTokenStoreError(
      'ERR_INVALID_OPTION',
      `createRedisTokenStore: ${name} must be a finite number > 0, got ${String(value)}.`,
    );
  }
  return value;
}

/** Reports an event to the observer; an observer that throws never breaks token handling. */
export type Emit = (event: RedisTokenStoreEvent) => void;

export function emitterOf(onEvent: RedisTokenStoreSettings['onEvent']): Emit {
  return (event) => {
    if (!onEvent) return;
    try {
      onEvent(event);
    } catch {
      // an observer must not break token handling
    }
  };
}
