import { raceSignal, type StoredToken } from '@partner-lending/auth';
import { Connection, withDeadline } from './connection.js';
import { cipherOf, Entries } from './entries.js';
import { RedisTokenStoreError } from './errors.js';
import { Notices } from './notices.js';
import {
  emitterOf,
  positive,
  type RedisClient,
  type RedisCluster,
  type RedisSentinel,
  type RedisTokenStore,
  type RedisTokenStoreOptions,
} from './options.js';
import { DEFAULT_NAMESPACE, noticeChannel, redisNames } from './redis-keys.js';
import { createFlight } from './single-flight.js';

export type {
  RedisClient,
  RedisCluster,
  RedisConnection,
  RedisOperation,
  RedisSentinel,
  RedisTokenStore,
  RedisTokenStoreEvent,
  RedisTokenStoreOptions,
  RedisTokenStoreSettings,
  SentinelFollowOptions,
} from './options.js';

/**
 * Creates a Redis-backed TokenStore for `createTokenProvider({ store })` or
 * `createPartnerClient({ store })`: one token per (token URL, client, audience, scopes) for a whole
 * fleet of processes, fetched by one process at a time, encrypted at rest.
 */
export function createRedisTokenStore(options: RedisTokenStoreOptions): RedisTokenStore {
  const { url, client: given } = options as {
    url?: string;
    client?: RedisClient | RedisCluster | RedisSentinel;
  };
  if ((url === undefined || url === '') === (given === undefined)) {
    throw new RedisTokenStoreError(
      'ERR_INVALID_OPTION',
      given === undefined
        ? 'createRedisTokenStore needs { url } (e.g. redis://localhost:6379) or { client }; url is empty or undefined — is the variable you read it from (REDIS_URL?) set?'
        : 'createRedisTokenStore takes { url } or { client }, not both.',
    );
  }
  const namespace = options.namespace ?? DEFAULT_NAMESPACE;
  if (typeof namespace !== 'string' || /[{}]/.test(namespace)) {
    throw new RedisTokenStoreError(
      'ERR_INVALID_OPTION',
      'createRedisTokenStore: namespace must be a string without { or } (they mark the hash tag).',
    );
  }
  const commandTimeoutMs = positive(options.commandTimeoutMs, 1_000, 'commandTimeoutMs');
  const skipMs = positive(options.skipMs, 1_000, 'skipMs');
  const lockLeaseMs = positive(options.lockLeaseMs, 5_000, 'lockLeaseMs');
  const connectTimeoutMs = positive(options.connectTimeoutMs, 2_000, 'connectTimeoutMs');
  const maxReconnectDelayMs = positive(options.maxReconnectDelayMs, 2_000, 'maxReconnectDelayMs');
  const emit = emitterOf(options.onEvent);
  const cipher = cipherOf(options.encryptionKey, emit);

  const channel = noticeChannel(namespace);
  // Notices and the connection refer to each other through this: a skipped Redis wakes every flight.
  let notices: Notices | undefined;
  const redis = new Connection(url, given, {
    commandTimeoutMs,
    skipMs,
    connectTimeoutMs,
    maxReconnectDelayMs,
    emit,
    onSkip: () => notices?.wakeAll({ kind: 'down' }),
    sentinel: options.sentinel ?? {},
    channel,
    onNotice: (message) => notices?.onMessage(message),
  });
  notices = new Notices(redis, channel, commandTimeoutMs, connectTimeoutMs);
  const entries = new Entries(redis, cipher, emit, channel);
  const flight = createFlight(redis, entries, notices, {
    namespace,
    channel,
    commandTimeoutMs,
    lockLeaseMs,
    emit,
  });
  const { client, kind, owned, readyEvent } = redis;

  /** One flight per (key, replacing) in this process: concurrent callers share it. */
  const flights = new Map<string, Promise<StoredToken>>();

  return {
    get isReady() {
      return !redis.closed && redis.usable && (notices.subscriber?.isReady !== false || redis.following);
    },

    get(key) {
      return entries.read('get', redisNames(namespace, key));
    },

    async set(key, value, ttlMs) {
      if (!(ttlMs > 0)) return;
      // The deadline is taken now, before the write waits anywhere: the key never outlives it.
      await entries.write('set', redisNames(namespace, key), value, Date.now() + ttlMs);
    },

    async delete(key) {
      await redis.send('delete', ['DEL', redisNames(namespace, key).token]);
    },

    singleFlight(key, fetchToken, { timeoutMs, replacing, signal }) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      if (redis.closed) return Promise.reject(redis.closedError());
      const id = `${key}\0${replacing ?? ''}`;
      let shared = flights.get(id);
      if (!shared) {
        shared = flight(key, fetchToken, timeoutMs, replacing).finally(() => flights.delete(id));
        flights.set(id, shared);
      }
      return raceSignal(shared, signal);
    },

    async close() {
      if (redis.closed) return;
      redis.closed = true;
      notices.wakeAll({ kind: 'down' });
      redis.stopProbe();
      // A hung server never answers QUIT: close() is bounded like every command.
      const shut = async (target: RedisClient | undefined) => {
        if (!target?.isOpen) return;
        if (target.isReady && Date.now() >= redis.skipUntil) {
          await withDeadline(target.close(), commandTimeoutMs, 'QUIT').catch(() => target.destroy());
        } else target.destroy();
      };
      if (kind === 'client') await shut(notices.subscriber);
      else if (notices.subscription !== undefined && client.isReady && Date.now() >= redis.skipUntil) {
        // The cluster's or sentinel's connection is the application's: only our listener goes.
        await withDeadline(
          client.unsubscribe(channel, notices.onMessage),
          commandTimeoutMs,
          'UNSUBSCRIBE',
        ).catch(() => {});
      }
      if (owned) await shut(client);
      else {
        // The application's client is its own again, with its own listeners ('error' included).
        client.off(readyEvent, redis.noteUp);
        client.off('error', redis.onError);
      }
    },
  };
}
