import { randomBytes } from 'node:crypto';
import type { SingleFlightOptions, StoredToken, TokenStore } from '@partner-lending/auth';
import { createClient, type RedisClientType } from 'redis';
import { RedisTokenStoreError, type RedisTokenStoreErrorCode } from './errors.js';
import { DEFAULT_NAMESPACE, noticeChannel, type RedisNames, redisNames } from './redis-keys.js';
import {
  acquireScript,
  dropScript,
  releaseScript,
  renewScript,
  type Script,
  throttleScript,
  writeScript,
} from './scripts.js';
import {
  type EncryptionKeyInput,
  type EntryFields,
  parseKey,
  TokenCipher,
  type UnreadableReason,
} from './token-cipher.js';

/**
 * A node-redis client (`createClient()` from `redis`), connected by the application. Any module,
 * script or RESP version set-up is accepted: the store only sends plain commands through it.
 */
// biome-ignore lint/suspicious/noExplicitAny: every generic set-up of the client is accepted.
export type RedisClient = RedisClientType<any, any, any, any, any>;

/** What the store uses of a client, a cluster or a sentinel set-up (any of their generic set-ups fits). */
interface CommonRedis {
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
   * The single-flight lock is taken for this long and renewed by its holder while its token request
   * runs (never past the flight's `timeoutMs`), so a holder that dies releases it within this time
   * and a waiting process takes over. Default 5 000.
   */
  lockLeaseMs?: number;
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

type Notice =
  | { kind: 'ok' | 'failed'; lockId: string; code: string; waitMs: number }
  | { kind: 'timer' | 'down' };

let warnedUnencrypted = false;

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new TypeError(`createRedisTokenStore: ${name} must be a finite number > 0, got ${String(value)}.`);
  }
  return value;
}

/** True for an error the Redis server answered with (node-redis's ErrorReply and its subclasses). */
function isErrorReply(error: unknown): boolean {
  for (let proto = error; proto; proto = Object.getPrototypeOf(proto)) {
    if ((proto as { constructor?: { name?: string } }).constructor?.name === 'ErrorReply') return true;
  }
  return false;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Redis refused the credentials: a wrong password, a wrong user, or no AUTH where one is needed. */
function isAuthRefusal(error: unknown): boolean {
  return /^(WRONGPASS|NOAUTH)\b/.test(messageOf(error));
}

/** No answer within the store's own deadline. */
class CommandTimeout extends Error {}

/** Settles like `promise`, or rejects with a CommandTimeout after `ms` (a timer of our own). */
function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new CommandTimeout(`no answer to ${what} within ${ms} ms`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** A Redis that stays hung is skipped for at most this many times skipMs between probes (a probe is one PING, cheap). */
const MAX_SKIP_FACTOR = 4;
/** Longest wait between connection attempts after Redis refused the credentials. */
const MAX_AUTH_BACKOFF_MS = 60_000;

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
    throw new TypeError(
      given === undefined
        ? 'createRedisTokenStore needs { url } (e.g. redis://localhost:6379) or { client }; url is empty or undefined — is the variable you read it from (REDIS_URL?) set?'
        : 'createRedisTokenStore takes { url } or { client }, not both.',
    );
  }
  const namespace = options.namespace ?? DEFAULT_NAMESPACE;
  if (typeof namespace !== 'string' || /[{}]/.test(namespace)) {
    throw new TypeError(
      'createRedisTokenStore: namespace must be a string without { or } (they mark the hash tag).',
    );
  }
  const commandTimeoutMs = positive(options.commandTimeoutMs, 1_000, 'commandTimeoutMs');
  const skipMs = positive(options.skipMs, 1_000, 'skipMs');
  const lockLeaseMs = positive(options.lockLeaseMs, 5_000, 'lockLeaseMs');
  const connectTimeoutMs = positive(options.connectTimeoutMs, 2_000, 'connectTimeoutMs');
  const maxReconnectDelayMs = positive(options.maxReconnectDelayMs, 2_000, 'maxReconnectDelayMs');
  const onEvent = options.onEvent;
  const emit = (event: RedisTokenStoreEvent): void => {
    if (!onEvent) return;
    try {
      onEvent(event);
    } catch {
      // an observer must not break token handling
    }
  };

  const configured = options.encryptionKey ?? process.env.PARTNER_TOKEN_STORE_KEY;
  const keyList = (
    configured === undefined || configured === '' ? [] : [configured]
  ).flat() as EncryptionKeyInput[];
  const from = options.encryptionKey === undefined ? 'PARTNER_TOKEN_STORE_KEY' : 'encryptionKey';
  const cipher = new TokenCipher(
    keyList.map((key, index) => parseKey(key, keyList.length > 1 ? `${from}[${index}]` : from)),
  );
  if (!cipher.encrypted) {
    if (!warnedUnencrypted) {
      warnedUnencrypted = true;
      process.emitWarning(
        'no PARTNER_TOKEN_STORE_KEY or encryptionKey: access tokens are stored in Redis in clear, readable by anyone who can read Redis or its backups, and tokens written by anyone who can write to Redis are trusted. Set a 32-byte key (`openssl rand -base64 32`).',
        { code: 'PARTNER_TOKEN_STORE_UNENCRYPTED' },
      );
    }
    emit({ type: 'encryption-disabled' });
  }

  const channel = noticeChannel(namespace);
  const owned = given === undefined;
  let closed = false;
  let up = false;
  // The breaker: a Redis that timed out or failed is skipped until `skipUntil`, then probed once.
  let skipUntil = 0;
  let skipFor = 0;
  let skipReason = '';
  /** A key of the last failed command: a cluster's probe goes to that key's node, not any node. */
  let probeKey: string | undefined;
  let probe: ReturnType<typeof setTimeout> | undefined;

  const noteUp = () => {
    authRefusal = undefined;
    authFailures = 0;
    skipUntil = 0;
    skipFor = 0;
    if (up) return;
    up = true;
    emit({ type: 'redis-ready' });
  };
  const noteDown = (cause: unknown) => {
    if (!up) return;
    up = false;
    emit({ type: 'redis-down', message: messageOf(cause) });
  };

  /** The last credentials refusal, while it lasts: calls name it instead of "not reachable". */
  let authRefusal: string | undefined;
  let authFailures = 0;
  const reconnectStrategy = (retries: number, cause: unknown) => {
    noteDown(cause);
    if (isAuthRefusal(cause)) {
      // Retrying a wrong password at the connection pace only hammers Redis (and its audit log).
      authFailures++;
      if (authRefusal === undefined) emit({ type: 'redis-auth-failed', message: messageOf(cause) });
      authRefusal = messageOf(cause);
      const cap = Math.min(MAX_AUTH_BACKOFF_MS, 1_000 * 2 ** Math.min(authFailures - 1, 16));
      const delayMs = Math.round(cap / 2 + (Math.random() * cap) / 2);
      if (!closed) emit({ type: 'redis-reconnecting', attempt: retries + 1, delayMs });
      return delayMs;
    }
    const cap = Math.min(maxReconnectDelayMs, 100 * 2 ** Math.min(retries, 20));
    // Jitter, so that a fleet that lost Redis together does not reconnect in step.
    const delayMs = Math.round(cap / 2 + (Math.random() * cap) / 2);
    if (!closed) emit({ type: 'redis-reconnecting', attempt: retries + 1, delayMs });
    return delayMs;
  };

  const kind = given === undefined ? 'client' : kindOf(given);
  const client: RedisClient =
    (given as RedisClient | undefined) ??
    (createClient({
      url: url as string,
      // Commands sent while disconnected fail at once instead of piling up until Redis returns.
      disableOfflineQueue: true,
      socket: { connectTimeout: connectTimeoutMs, reconnectStrategy },
    }) as RedisClient);
  // A cluster says `connect` once its slots are known; a client and a sentinel say `ready`.
  const readyEvent = kind === 'cluster' ? 'connect' : 'ready';
  client.on(readyEvent, noteUp);
  if (owned) client.on('error', noteDown);
  if (client.isReady) up = true;

  /** Resolves once the client was ready, or after connectTimeoutMs: a cold start waits, an outage does not. */
  const waitFirstReady = (target: RedisClient, event = 'ready'): Promise<void> =>
    target.isReady
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            target.off(event, done);
            resolve();
          };
          const timer = setTimeout(done, connectTimeoutMs);
          target.on(event, done);
        });
  /**
   * Sends one command: a cluster routes it by its first key (the scripts' keys share a hash tag, so
   * one slot), a sentinel set-up to its primary.
   */
  const dispatch = (args: string[]): Promise<unknown> => {
    if (kind === 'cluster') {
      return (client as unknown as RedisCluster).sendCommand(firstKeyOf(args), false, args, {
        timeout: commandTimeoutMs,
      });
    }
    if (kind === 'sentinel') {
      return (client as unknown as RedisSentinel).sendCommand(false, args, { timeout: commandTimeoutMs });
    }
    return client.sendCommand(args, { timeout: commandTimeoutMs });
  };
  const firstReady = waitFirstReady(client, readyEvent);
  if (owned) {
    client.connect().catch((error: unknown) => {
      if (!closed) emit({ type: 'redis-down', message: messageOf(error) });
    });
  }

  const unavailable = (operation: RedisOperation, message: string, cause?: unknown) => {
    const error = new RedisTokenStoreError('ERR_REDIS_UNAVAILABLE', message, { cause });
    emit({ type: 'redis-error', operation, code: error.code, message });
    return error;
  };

  const closedError = () =>
    new RedisTokenStoreError(
      'ERR_STORE_CLOSED',
      'the Redis token store was closed; create a new one (or stop calling it after close()).',
    );

  /**
   * Redis timed out or failed: skip it for a jittered while (doubling while it stays hung), wake the
   * flights of this process so they fall back at once, and probe it with one PING afterwards.
   */
  const skip = (reason: string) => {
    if (closed) return;
    skipFor = skipFor === 0 ? skipMs : Math.min(skipFor * 2, MAX_SKIP_FACTOR * skipMs);
    const ms = Math.round(skipFor / 2 + (Math.random() * skipFor) / 2);
    skipUntil = Date.now() + ms;
    skipReason = reason;
    noteDown(new Error(reason));
    emit({ type: 'redis-skipped', skipMs: ms, message: reason });
    wakeAll({ kind: 'down' });
    if (probe !== undefined) clearTimeout(probe);
    probe = setTimeout(() => {
      probe = undefined;
      // Disconnected: the client's own reconnection (and its `ready`) takes over from here.
      if (closed || !client.isReady) return;
      const probeArgs = kind === 'cluster' && probeKey !== undefined ? ['EXISTS', probeKey] : ['PING'];
      // Callers keep skipping while the probe is out: none of them pays a timeout the probe pays.
      skipUntil = Date.now() + commandTimeoutMs + 1;
      withDeadline(dispatch(probeArgs), commandTimeoutMs, probeArgs[0] as string).then(
        () => noteUp(),
        (error: unknown) => skip(`the probe got ${messageOf(error)}`),
      );
    }, ms);
    probe.unref?.();
  };

  const authError = (operation: RedisOperation, detail: string, cause?: unknown) => {
    const message = `Redis refused the credentials (${detail.slice(0, 120)}): check the user and password in the Redis URL or of the client you passed (an ACL user needs them both); ${owned ? 'the store keeps retrying, backing off up to 60 s, and ' : ''}the token provider falls back to its own token request meanwhile.`;
    const error = new RedisTokenStoreError('ERR_REDIS_AUTH', message, { cause });
    emit({ type: 'redis-error', operation, code: error.code, message });
    return error;
  };

  const ensureOpen = async (operation: RedisOperation) => {
    if (closed) throw closedError();
    await firstReady;
    const left = skipUntil - Date.now();
    if (left > 0) {
      throw unavailable(
        operation,
        `Redis is skipped for another ${left} ms (${skipReason}); the token provider serves from memory or falls back to its own token request meanwhile.`,
      );
    }
    if (!client.isReady) {
      noteDown(new Error('not connected'));
      if (authRefusal !== undefined) throw authError(operation, authRefusal);
      throw unavailable(
        operation,
        owned
          ? `Redis is not reachable (the store reconnects by itself, backing off up to ${maxReconnectDelayMs} ms); the token provider falls back to its own token request meanwhile.`
          : client.isOpen
            ? 'the Redis client passed as { client } is not connected (it is reconnecting); the token provider falls back to its own token request meanwhile.'
            : 'the Redis client passed as { client } is not open: call `await client.connect()` before using the store.',
      );
    }
  };

  const send = async <T>(operation: RedisOperation, args: string[]): Promise<T> => {
    await ensureOpen(operation);
    try {
      // node-redis's own `timeout` stops waiting only for a command not yet written to the socket; the
      // store's timer covers a command written to a server that never answers (SIGSTOP, a black hole).
      return (await withDeadline(dispatch(args), commandTimeoutMs, args[0] as string)) as T;
    } catch (cause) {
      // EVALSHA of a script the server has not seen yet: evaluate() sends the script itself.
      if (args[0] === 'EVALSHA' && /^NOSCRIPT/.test(messageOf(cause))) throw cause;
      if (isErrorReply(cause)) {
        if (isAuthRefusal(cause)) throw authError(operation, messageOf(cause), cause);
        const message = `Redis refused ${args[0]}: ${messageOf(cause)}; check the Redis user's permissions and that the server is a writable primary.`;
        emit({ type: 'redis-error', operation, code: 'ERR_REDIS_COMMAND', message });
        throw new RedisTokenStoreError('ERR_REDIS_COMMAND', message, { cause });
      }
      const timedOut = cause instanceof CommandTimeout;
      probeKey = firstKeyOf(args) ?? probeKey;
      skip(timedOut ? `no answer to ${args[0]} within ${commandTimeoutMs} ms` : messageOf(cause));
      throw unavailable(
        operation,
        timedOut
          ? `Redis did not answer ${args[0]} within ${commandTimeoutMs} ms (commandTimeoutMs; a hung or overloaded server?); the token provider falls back to its own token request meanwhile.`
          : `Redis failed ${args[0]} (${messageOf(cause)}); the token provider falls back to its own token request meanwhile.`,
        cause,
      );
    }
  };

  const evaluate = async <T>(operation: RedisOperation, s: Script, keys: string[], args: string[]) => {
    const tail = [String(keys.length), ...keys, ...args];
    try {
      return await send<T>(operation, ['EVALSHA', s.sha1, ...tail]);
    } catch (error) {
      if (error instanceof RedisTokenStoreError || !/^NOSCRIPT/.test(messageOf(error))) throw error;
      return await send<T>(operation, ['EVAL', s.source, ...tail]);
    }
  };

  const read = async (operation: RedisOperation, names: RedisNames): Promise<StoredToken | undefined> => {
    const [v, k, e, o] = await send<(string | null)[]>(operation, ['HMGET', names.token, 'v', 'k', 'e', 'o']);
    if (v == null && k == null) return undefined;
    const fields: Partial<EntryFields> = {};
    if (v != null) fields.v = v;
    if (k != null) fields.k = k;
    if (e != null) fields.e = e;
    if (o != null) fields.o = o;
    const opened = cipher.open(names.token, fields);
    if ('token' in opened) return opened.token;
    emit({ type: 'token-unreadable', tag: names.tag, reason: opened.unreadable });
    // A damaged entry would otherwise stand until it expires (and could block newer writes): drop it,
    // unless it is merely sealed with a key this process lacks (another set-up's token).
    if ((opened.unreadable === 'tampered' || opened.unreadable === 'malformed') && v != null) {
      await evaluate(operation, dropScript, [names.token], [v]).catch(() => {});
    }
    return undefined;
  };

  const write = async (
    operation: RedisOperation,
    names: RedisNames,
    token: StoredToken,
    ttlMs: number,
    release?: { lockId: string; message: string },
  ): Promise<void> => {
    const { v, k, e, o } = cipher.seal(names.token, token);
    const written = await evaluate<number>(
      operation,
      writeScript,
      [names.token, names.lock],
      [
        v,
        k,
        e,
        o,
        String(Math.ceil(ttlMs)),
        release?.lockId ?? '',
        release ? channel : '',
        release?.message ?? '',
      ],
    );
    if (written === 0) emit({ type: 'write-skipped', tag: names.tag });
  };

  // ---- notices (pub/sub on a dedicated connection) ----
  const waiters = new Map<string, Set<(notice: Notice) => void>>();
  let subscriber: RedisClient | undefined;

  const wakeAll = (notice: Notice) => {
    for (const set of waiters.values()) for (const wake of set) wake(notice);
  };

  const onNotice = (message: string) => {
    const [tag = '', kind, lockId = '', code = '', wait = ''] = message.split('|');
    const set = waiters.get(tag);
    if (!set || (kind !== 'ok' && kind !== 'failed')) return;
    const waitMs = Number(wait) || 0;
    for (const wake of set) wake({ kind, lockId, code, waitMs });
  };
  /** The one subscription of this store, pending or done; reset only when it fails. */
  let subscription: Promise<void> | undefined;

  /**
   * Subscribes to the notice channel once: on a connection of its own for a single node (a subscribed
   * connection takes no other command), on the cluster's or sentinel's own pub/sub connection else.
   * Bounded: a subscription that hangs fails this call (and skips Redis) without being sent twice.
   */
  const subscribe = (): Promise<void> => {
    if (subscription === undefined) {
      let target: RedisClient;
      if (kind === 'client') {
        if (subscriber === undefined) {
          const sub = client.duplicate(
            owned
              ? {}
              : { disableOfflineQueue: true, socket: { ...client.options?.socket, reconnectStrategy } },
          ) as RedisClient;
          sub.on('error', () => wakeAll({ kind: 'down' }));
          sub.on('end', () => wakeAll({ kind: 'down' }));
          sub.connect().catch(() => {});
          subscriber = sub;
        }
        target = subscriber;
      } else {
        target = client;
        subscriber = client;
      }
      const attempt = (async () => {
        await waitFirstReady(target, kind === 'client' ? 'ready' : readyEvent);
        if (!target.isReady) throw new Error('the notice connection is not up');
        await target.subscribe(channel, onNotice);
      })();
      subscription = attempt;
      attempt.catch(() => {
        if (subscription === attempt) subscription = undefined;
      });
    }
    const ms = subscriber?.isReady ? commandTimeoutMs : connectTimeoutMs + commandTimeoutMs;
    return withDeadline(subscription, ms, 'SUBSCRIBE').catch((error: unknown) => {
      if (error instanceof CommandTimeout) skip(`no answer to SUBSCRIBE within ${ms} ms`);
      throw error;
    });
  };

  const ensureSubscribed = async () => {
    await ensureOpen('subscribe');
    try {
      await subscribe();
    } catch (cause) {
      throw unavailable('subscribe', `the Redis notice connection is not up (${messageOf(cause)}).`, cause);
    }
    if (!subscriber?.isReady) {
      throw unavailable(
        'subscribe',
        'the Redis notice connection is down (it reconnects by itself); the token provider falls back to its own token request meanwhile.',
      );
    }
  };

  /** Collects the notices for one tag from now on; `next` waits for one, at most `ms`. */
  const listen = (tag: string) => {
    const queue: Notice[] = [];
    let wake: ((notice: Notice) => void) | undefined;
    const onNotice = (notice: Notice) => {
      if (wake) wake(notice);
      else queue.push(notice);
    };
    let set = waiters.get(tag);
    if (!set) {
      set = new Set();
      waiters.set(tag, set);
    }
    set.add(onNotice);
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
  };

  const notice = (tag: string, kind: 'ok' | 'failed', lockId: string, code = '', waitMs = 0) =>
    `${tag}|${kind}|${lockId}|${code.replace(/[^A-Za-z0-9_]/g, '')}|${Math.max(0, Math.ceil(waitMs))}`;

  const throttledError = (waitMs: number, how: string) =>
    new RedisTokenStoreError(
      'ERR_REMOTE_THROTTLED',
      `the token endpoint asked ${how} to retry later (Retry-After, another ${Math.ceil(waitMs / 1000)} s): no process of the fleet sends a token request for these scopes until then.`,
      { remoteCode: 'ERR_TOKEN_THROTTLED', throttledUntil: Date.now() + waitMs },
    );

  const fresh = (token: StoredToken | undefined, replacing: string | undefined): token is StoredToken => {
    if (token === undefined || token.accessToken === replacing) return false;
    const left = token.expiresAt - Date.now();
    if (left <= 0) return false;
    // A refresh wants a token newer than the one it replaces. A stored one past half its lifetime is
    // no such token (a process that went its own way while Redis was down may hold a newer one).
    return replacing === undefined || left > (token.expiresAt - token.obtainedAt) / 2;
  };

  const hold = async (
    names: RedisNames,
    lockId: string,
    fetchToken: () => Promise<StoredToken>,
    lease: { ms: number; until: number },
  ): Promise<StoredToken> => {
    // Renew the lease while this process is alive and its request runs, up to the flight's deadline.
    const renewal = setInterval(
      () => {
        const left = lease.until - Date.now();
        if (left <= 0) return clearInterval(renewal);
        const ms = String(Math.max(1, Math.ceil(Math.min(lease.ms, left))));
        evaluate('single-flight', renewScript, [names.lock], [lockId, ms]).catch(() => {});
      },
      Math.max(10, Math.floor(lease.ms / 3)),
    );
    renewal.unref();
    let token: StoredToken;
    try {
      token = await fetchToken();
    } catch (error) {
      clearInterval(renewal);
      const code = String((error as { code?: unknown }).code ?? 'ERR_UNKNOWN');
      const retryAfterMs = (error as { retryAfterMs?: unknown }).retryAfterMs;
      if (code === 'ERR_TOKEN_THROTTLED' && typeof retryAfterMs === 'number' && retryAfterMs > 0) {
        // The endpoint throttles: the whole fleet waits as long as it asked, not just this process.
        const ms = String(Math.ceil(retryAfterMs));
        await evaluate(
          'single-flight',
          throttleScript,
          [names.lock, names.throttle],
          [lockId, channel, notice(names.tag, 'failed', lockId, code, retryAfterMs), ms],
        ).catch(() => {});
        throw error;
      }
      await evaluate(
        'single-flight',
        releaseScript,
        [names.lock],
        [lockId, channel, notice(names.tag, 'failed', lockId, code)],
      ).catch(() => {});
      throw error;
    }
    clearInterval(renewal);
    // The token is this caller's whatever happens next: a failed write only costs the others a wait.
    const ttlMs = token.expiresAt - Date.now();
    const message = notice(names.tag, 'ok', lockId);
    await (ttlMs > 0
      ? write('single-flight', names, token, ttlMs, { lockId, message })
      : evaluate('single-flight', releaseScript, [names.lock], [lockId, channel, message])
    ).catch(() => {});
    return token;
  };

  const flight = async (
    key: string,
    fetchToken: () => Promise<StoredToken>,
    timeoutMs: number,
    replacing: string | undefined,
  ): Promise<StoredToken> => {
    const names = redisNames(namespace, key);
    const deadline = Date.now() + timeoutMs;
    await ensureSubscribed();
    const notices = listen(names.tag);
    try {
      let waited = false;
      let takeover = false;
      // A waiter looks again at least this often: a hung Redis or a lost notice is found within it.
      const checkMs = Math.min(commandTimeoutMs, 1_000);
      // Bounded: each round either returns, waits for a notice (at most checkMs), or finds the lock gone.
      const rounds = Math.ceil(timeoutMs / checkMs) + 100;
      for (let round = 0; round < rounds; round++) {
        notices.clear();
        const current = await read('single-flight', names);
        if (fresh(current, replacing)) return current;
        const lockId = randomBytes(16).toString('hex');
        const lockMs = Math.max(1, Math.ceil(Math.min(timeoutMs, lockLeaseMs)));
        const [acquired, lockTtl = -1, holder = ''] = await evaluate<[number, number?, string?]>(
          'single-flight',
          acquireScript,
          [names.lock, names.throttle],
          [lockId, String(lockMs)],
        );
        if (acquired === 2) throw throttledError(Number(lockTtl), 'a process of the fleet');
        if (acquired === 1) {
          // A holder may have written between the read above and the lock: look once more.
          const landed = await read('single-flight', names);
          if (fresh(landed, replacing)) {
            await evaluate(
              'single-flight',
              releaseScript,
              [names.lock],
              [lockId, channel, notice(names.tag, 'ok', lockId)],
            ).catch(() => {});
            return landed;
          }
          emit({ type: 'lock-acquired', tag: names.tag, takeover });
          return await hold(names, lockId, fetchToken, { ms: lockMs, until: Date.now() + timeoutMs });
        }
        const left = deadline - Date.now();
        if (left <= 0) break;
        if (!waited) emit({ type: 'lock-waiting', tag: names.tag, lockTtlMs: Number(lockTtl) });
        waited = true;
        // Wake on the holder's notice, when its lock expires (a holder that died sends none), or after
        // checkMs to look again (a hung Redis times out that look, and the provider falls back).
        const lockEndsFirst = Number(lockTtl) >= 0 && Number(lockTtl) + 5 <= Math.min(left, checkMs);
        const wait = lockEndsFirst ? Number(lockTtl) + 5 : Math.min(left, checkMs);
        const next = await notices.next(wait);
        if (next.kind === 'failed' && next.lockId === holder && next.code === 'ERR_TOKEN_THROTTLED') {
          throw throttledError(next.waitMs, 'the process holding the token lock');
        }
        if (next.kind === 'failed' && next.lockId === holder) {
          throw new RedisTokenStoreError(
            'ERR_REMOTE_FETCH_FAILED',
            `the process that held the token lock reported that its token request failed (${next.code}); the same request from this process would most likely fail as well.`,
            { remoteCode: next.code },
          );
        }
        if (next.kind === 'timer' && lockEndsFirst) takeover = true;
        if (next.kind === 'down') await ensureSubscribed();
      }
      const message = `no token arrived from the process holding the token lock within ${timeoutMs} ms; the token provider falls back to its own token request.`;
      emit({ type: 'redis-error', operation: 'single-flight', code: 'ERR_SINGLE_FLIGHT_TIMEOUT', message });
      throw new RedisTokenStoreError('ERR_SINGLE_FLIGHT_TIMEOUT', message);
    } finally {
      notices.stop();
    }
  };

  /** One flight per (key, replacing) in this process: concurrent callers share it. */
  const flights = new Map<string, Promise<StoredToken>>();

  return {
    get isReady() {
      return !closed && client.isReady && subscriber?.isReady !== false;
    },

    get(key) {
      return read('get', redisNames(namespace, key));
    },

    async set(key, value, ttlMs) {
      if (!(ttlMs > 0)) return;
      await write('set', redisNames(namespace, key), value, ttlMs);
    },

    async delete(key) {
      await send('delete', ['DEL', redisNames(namespace, key).token]);
    },

    singleFlight(key, fetchToken, { timeoutMs, replacing, signal }) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      if (closed) return Promise.reject(closedError());
      const id = `${key}\0${replacing ?? ''}`;
      let shared = flights.get(id);
      if (!shared) {
        shared = flight(key, fetchToken, timeoutMs, replacing).finally(() => flights.delete(id));
        flights.set(id, shared);
      }
      if (!signal) return shared;
      const flightPromise = shared;
      return new Promise<StoredToken>((resolve, reject) => {
        const onAbort = () => reject(signal.reason);
        signal.addEventListener('abort', onAbort, { once: true });
        flightPromise.then(
          (token) => {
            signal.removeEventListener('abort', onAbort);
            resolve(token);
          },
          (error: unknown) => {
            signal.removeEventListener('abort', onAbort);
            reject(error);
          },
        );
      });
    },

    async close() {
      if (closed) return;
      closed = true;
      wakeAll({ kind: 'down' });
      if (probe !== undefined) clearTimeout(probe);
      // A hung server never answers QUIT: close() is bounded like every command.
      const shut = async (target: RedisClient | undefined) => {
        if (!target?.isOpen) return;
        if (target.isReady && Date.now() >= skipUntil) {
          await withDeadline(target.close(), commandTimeoutMs, 'QUIT').catch(() => target.destroy());
        } else target.destroy();
      };
      if (kind === 'client') await shut(subscriber);
      else if (subscription !== undefined && client.isReady && Date.now() >= skipUntil) {
        // The cluster's or sentinel's connection is the application's: only our listener goes.
        await withDeadline(client.unsubscribe(channel, onNotice), commandTimeoutMs, 'UNSUBSCRIBE').catch(
          () => {},
        );
      }
      if (owned) await shut(client);
      else client.off(readyEvent, noteUp);
    },
  };
}

/** Which node-redis client this is: a single node, a Redis Cluster or a Sentinel set-up. */
function kindOf(given: object): 'client' | 'cluster' | 'sentinel' {
  if ('masters' in given && 'slots' in given) return 'cluster';
  if (typeof (given as { getMasterNode?: unknown }).getMasterNode === 'function') return 'sentinel';
  return 'client';
}

/** The first key of a command, for cluster routing: EVAL/EVALSHA name it after the key count. */
function firstKeyOf(args: string[]): string | undefined {
  const name = args[0]?.toUpperCase();
  if (name === 'EVAL' || name === 'EVALSHA') return Number(args[2]) > 0 ? args[3] : undefined;
  if (name === 'PING') return undefined;
  return args[1];
}
