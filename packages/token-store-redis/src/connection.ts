import { createClient } from 'redis';
import { ClusterCatchUp } from './cluster-catch-up.js';
import { CommandTimeout, messageOf, withDeadline } from './deadline.js';
import { RedisTokenStoreError } from './errors.js';
import type {
  Emit,
  RedisClient,
  RedisCluster,
  RedisOperation,
  RedisSentinel,
  SentinelFollowOptions,
} from './options.js';
import { clusterSlot } from './redis-keys.js';
import type { Script } from './scripts.js';
import { SentinelWatch } from './sentinel-watch.js';

export { CommandTimeout, messageOf, withDeadline };

/** True for an error the Redis server answered with (node-redis's ErrorReply and its subclasses). */
function isErrorReply(error: unknown): boolean {
  for (let proto = error; proto; proto = Object.getPrototypeOf(proto)) {
    if ((proto as { constructor?: { name?: string } }).constructor?.name === 'ErrorReply') return true;
  }
  return false;
}

/** Redis refused the credentials: a wrong password, a wrong user, or no AUTH where one is needed. */
function isAuthRefusal(error: unknown): boolean {
  return /^(WRONGPASS|NOAUTH)\b/.test(messageOf(error));
}

/** Which node-redis client this is: a single node, a Redis Cluster or a Sentinel set-up. */
export function kindOf(given: object): 'client' | 'cluster' | 'sentinel' {
  if ('masters' in given && 'slots' in given) return 'cluster';
  if (typeof (given as { getMasterNode?: unknown }).getMasterNode === 'function') return 'sentinel';
  return 'client';
}

/** The first key of a command, for cluster routing: EVAL/EVALSHA name it after the key count. */
export function firstKeyOf(args: string[]): string | undefined {
  const name = args[0]?.toUpperCase();
  if (name === 'EVAL' || name === 'EVALSHA') return Number(args[2]) > 0 ? args[3] : undefined;
  if (name === 'PING') return undefined;
  return args[1];
}

/**
 * After the first skip, Redis is probed again every PROBE_MIN_MS to PROBE_MAX_MS (at random, so a fleet
 * does not probe in step), at most skipMs: a probe is one PING (or EXISTS on a cluster), cheap, and a
 * new primary is found within a fraction of a second of its promotion instead of after a back-off.
 */
const PROBE_MIN_MS = 100;
const PROBE_MAX_MS = 250;
/** Longest wait between connection attempts after Redis refused the credentials. */
const MAX_AUTH_BACKOFF_MS = 60_000;

export interface ConnectionSettings {
  commandTimeoutMs: number;
  skipMs: number;
  connectTimeoutMs: number;
  maxReconnectDelayMs: number;
  emit: Emit;
  /** Redis was just skipped: the flights of this process must fall back at once. */
  onSkip: () => void;
  /** Sentinel: follow a failover from `+switch-master` (false: leave it to node-redis). */
  sentinel: SentinelFollowOptions | false;
  /** The notice channel and its handler (the Sentinel watch carries notices on its direct path). */
  channel: string;
  onNotice: (message: string) => void;
}

/**
 * The store's way to Redis: the client (its own from a URL, or the application's), a deadline of the
 * store's own on every command, routing (cluster by first key, sentinel to its primary), and the
 * breaker — a Redis that timed out or failed is skipped for a jittered while, then probed once.
 */
export class Connection {
  readonly client: RedisClient;
  readonly kind: 'client' | 'cluster' | 'sentinel';
  /** The store created the client from a URL (and closes it); else it is the application's. */
  readonly owned: boolean;
  /** A cluster says `connect` once its slots are known; a client and a sentinel say `ready`. */
  readonly readyEvent: 'connect' | 'ready';
  readonly firstReady: Promise<void>;
  closed = false;
  /** The client was ready at least once: from then on no wait is a cold start's (connectTimeoutMs). */
  everUp = false;
  readonly #settings: ConnectionSettings;
  #up = false;
  // The breaker: a Redis that timed out or failed is skipped until `skipUntil`, then probed once.
  #skipUntil = 0;
  #skipFor = 0;
  #skipReason = '';
  /** A key of the last failed command: a cluster's probe goes to that key's node, not any node. */
  #probeKey: string | undefined;
  #probe: ReturnType<typeof setTimeout> | undefined;
  /** A probe command is out (one at a time). */
  #probeOut = false;
  /** The last credentials refusal, while it lasts: calls name it instead of "not reachable". */
  #authRefusal: string | undefined;
  #authFailures = 0;
  /** Sentinel: the store's own way to a newly announced primary, while node-redis finds it. */
  readonly #watch: SentinelWatch | undefined;
  /** Cluster: the store's own check that a lost primary's slot was taken over (see ClusterCatchUp). */
  readonly #catchUp: ClusterCatchUp | undefined;

  constructor(
    url: string | undefined,
    given: RedisClient | RedisCluster | RedisSentinel | undefined,
    settings: ConnectionSettings,
  ) {
    this.#settings = settings;
    this.owned = given === undefined;
    this.kind = given === undefined ? 'client' : kindOf(given);
    this.client =
      (given as RedisClient | undefined) ??
      (createClient({
        url: url as string,
        // Commands sent while disconnected fail at once instead of piling up until Redis returns.
        disableOfflineQueue: true,
        socket: { connectTimeout: settings.connectTimeoutMs, reconnectStrategy: this.reconnectStrategy },
      }) as RedisClient);
    this.readyEvent = this.kind === 'cluster' ? 'connect' : 'ready';
    if (this.kind === 'sentinel' && settings.sentinel !== false) {
      this.#watch = new SentinelWatch(this.client as unknown as RedisSentinel, settings.sentinel, {
        emit: settings.emit,
        commandTimeoutMs: settings.commandTimeoutMs,
        connectTimeoutMs: settings.connectTimeoutMs,
        channel: settings.channel,
        onNotice: settings.onNotice,
        onDirect: this.noteUp,
        onDirectLost: (reason) => this.skip(reason),
      });
      this.client.on('ready', this.#watch.onClientReady);
      this.#watch.start();
    }
    if (this.kind === 'cluster') {
      this.#catchUp = new ClusterCatchUp(this.client as unknown as RedisCluster, {
        emit: settings.emit,
        commandTimeoutMs: settings.commandTimeoutMs,
        connectTimeoutMs: settings.connectTimeoutMs,
      });
      this.client.on('node-ready', this.#onNodeReady);
    }
    this.client.on(this.readyEvent, this.noteUp);
    // Every client gets the store's 'error' listener, the application's too: an EventEmitter without
    // one throws the error (a lost primary's socket error would end the process). Reported as events.
    this.client.on('error', this.onError);
    if (this.client.isReady) {
      this.#up = true;
      this.everUp = true;
    }
    this.firstReady = this.waitFirstReady(this.client, this.readyEvent);
    if (this.owned) {
      this.client.connect().catch((error: unknown) => {
        if (!this.closed) settings.emit({ type: 'redis-down', message: messageOf(error) });
      });
    }
  }

  /** Until when calls skip Redis (epoch ms); 0 when they do not. */
  get skipUntil(): number {
    return this.#skipUntil;
  }

  readonly noteUp = (): void => {
    this.#authRefusal = undefined;
    this.#authFailures = 0;
    this.#skipUntil = 0;
    this.#skipFor = 0;
    this.everUp = true;
    if (this.#up) return;
    this.#up = true;
    this.#settings.emit({ type: 'redis-ready' });
  };

  /** The client's 'error' events: reported (`redis-down`), never thrown. */
  readonly onError = (cause: unknown): void => {
    // A Sentinel client's errors about the lost primary say nothing of the one the watch serves from.
    if (this.closed || this.#watch?.direct !== undefined) return;
    this.noteDown(cause);
  };

  /**
   * Commands can go somewhere: the client is ready, or (Sentinel) the watch serves a new primary. A
   * Sentinel client stays "ready" while its primary's connection is lost, and holds a command sent
   * meanwhile until it has found the new primary (seconds): without a primary connection up, calls
   * reject at once instead of waiting out commandTimeoutMs each.
   */
  get usable(): boolean {
    if (this.#watch?.direct !== undefined) return true;
    if (!this.client.isReady) return false;
    return (
      this.kind !== 'sentinel' || (this.client as unknown as RedisSentinel).getMasterNode() !== undefined
    );
  }

  /**
   * Cluster: the connection to the primary serving `key`'s slot is lost (node-redis reconnects it, or
   * finds its successor): a command there would wait out commandTimeoutMs, so the call fails at once.
   */
  #slotDown(key: string | undefined): boolean {
    if (this.kind !== 'cluster' || key === undefined) return false;
    const slots = (this.client as unknown as { slots?: { master?: { client?: { isReady?: boolean } } }[] })
      .slots;
    const client = slots?.[clusterSlot(key)]?.master?.client;
    return client !== undefined && client.isReady === false;
  }

  /** Sentinel: the watch's direct path serves commands and notices (node-redis is not on the new primary yet). */
  get following(): boolean {
    return this.#watch?.direct !== undefined && this.#watch.noticesUp;
  }

  readonly noteDown = (cause: unknown): void => {
    if (!this.#up) return;
    this.#up = false;
    this.#settings.emit({ type: 'redis-down', message: messageOf(cause) });
  };

  /** The reconnection backoff of the store's own client (and of its notice connection). */
  readonly reconnectStrategy = (retries: number, cause: unknown): number => {
    const { emit, maxReconnectDelayMs } = this.#settings;
    this.noteDown(cause);
    if (isAuthRefusal(cause)) {
      // Retrying a wrong password at the connection pace only hammers Redis (and its audit log).
      this.#authFailures++;
      if (this.#authRefusal === undefined) emit({ type: 'redis-auth-failed', message: messageOf(cause) });
      this.#authRefusal = messageOf(cause);
      const cap = Math.min(MAX_AUTH_BACKOFF_MS, 1_000 * 2 ** Math.min(this.#authFailures - 1, 16));
      const delayMs = Math.round(cap / 2 + (Math.random() * cap) / 2);
      if (!this.closed) emit({ type: 'redis-reconnecting', attempt: retries + 1, delayMs });
      return delayMs;
    }
    const cap = Math.min(maxReconnectDelayMs, 100 * 2 ** Math.min(retries, 20));
    // Jitter, so that a fleet that lost Redis together does not reconnect in step.
    const delayMs = Math.round(cap / 2 + (Math.random() * cap) / 2);
    if (!this.closed) emit({ type: 'redis-reconnecting', attempt: retries + 1, delayMs });
    return delayMs;
  };

  /** Resolves once the client was ready, or after connectTimeoutMs: a cold start waits, an outage does not. */
  waitFirstReady(target: RedisClient, event: string = 'ready'): Promise<void> {
    return target.isReady
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            target.off(event, done);
            resolve();
          };
          const timer = setTimeout(done, this.#settings.connectTimeoutMs);
          target.on(event, done);
        });
  }

  /**
   * Sends one command: a cluster routes it by its first key (the scripts' keys share a hash tag, so
   * one slot), a sentinel set-up to its primary.
   */
  dispatch(args: string[]): Promise<unknown> {
    const timeout = this.#settings.commandTimeoutMs;
    if (this.kind === 'cluster') {
      return (this.client as unknown as RedisCluster).sendCommand(firstKeyOf(args), false, args, { timeout });
    }
    if (this.kind === 'sentinel') {
      const direct = this.#watch?.direct;
      if (direct !== undefined) return direct.sendCommand(args, { timeout });
      return (this.client as unknown as RedisSentinel).sendCommand(false, args, { timeout });
    }
    return this.client.sendCommand(args, { timeout });
  }

  unavailable(operation: RedisOperation, message: string, cause?: unknown): RedisTokenStoreError {
    const error = new RedisTokenStoreError('ERR_REDIS_UNAVAILABLE', message, { cause });
    this.#settings.emit({ type: 'redis-error', operation, code: error.code, message });
    return error;
  }

  closedError(): RedisTokenStoreError {
    return new RedisTokenStoreError(
      'ERR_STORE_CLOSED',
      'the Redis token store was closed; create a new one (or stop calling it after close()).',
    );
  }

  /**
   * Redis timed out or failed: skip it for a jittered while (half to all of skipMs the first time),
   * wake the flights of this process so they fall back at once, and probe it with one command
   * afterwards; while the probes fail (or the client is not ready), probe again every 100–250 ms
   * (jittered, at most skipMs), so that the process is back on Redis promptly once a new primary
   * answers. A probe is bounded by commandTimeoutMs, and only one is out at a time.
   */
  skip(reason: string): void {
    if (this.closed) return;
    const { skipMs, emit } = this.#settings;
    const first = this.#skipFor === 0;
    this.#skipFor = skipMs;
    const ms = first
      ? Math.round(skipMs / 2 + (Math.random() * skipMs) / 2)
      : Math.round(Math.min(skipMs, PROBE_MIN_MS + Math.random() * (PROBE_MAX_MS - PROBE_MIN_MS)));
    this.#skipUntil = Date.now() + ms;
    this.#skipReason = reason;
    this.noteDown(new Error(reason));
    if (first) {
      emit({ type: 'redis-skipped', skipMs: ms, message: reason });
      this.#settings.onSkip();
    }
    this.#scheduleProbe(ms);
  }

  #scheduleProbe(ms: number): void {
    if (this.#probe !== undefined) clearTimeout(this.#probe);
    this.#probe = setTimeout(() => {
      this.#probe = undefined;
      if (this.closed || this.#skipFor === 0 || this.#probeOut) return;
      const key = this.#probeKey;
      if (this.#catchUp !== undefined && key !== undefined && this.#slotDown(key)) {
        // node-redis may not know yet that the slot was taken over: the store checks (and has it
        // refresh its topology), and probes at once when the slot's new primary is connected.
        void this.#catchUp.check(key).then((caughtUp) => caughtUp && this.#probeNow());
      }
      // Not ready (reconnecting, or a sentinel looking for its primary): look again shortly; its own
      // `ready` (noteUp) ends the skip as well.
      if (!this.usable || this.#slotDown(key)) return this.skip(this.#skipReason);
      const { commandTimeoutMs } = this.#settings;
      const probeArgs = this.kind === 'cluster' && key !== undefined ? ['EXISTS', key] : ['PING'];
      // Callers keep skipping while the probe is out: none of them pays a timeout the probe pays.
      this.#skipUntil = Date.now() + commandTimeoutMs + 1;
      this.#probeOut = true;
      withDeadline(this.dispatch(probeArgs), commandTimeoutMs, probeArgs[0] as string).then(
        () => {
          this.#probeOut = false;
          this.noteUp();
        },
        (error: unknown) => {
          this.#probeOut = false;
          if (this.#skipFor !== 0) this.skip(`the probe got ${messageOf(error)}`);
        },
      );
    }, ms);
    this.#probe.unref?.();
  }

  /** While Redis is skipped: probe now, not at the next tick (the slot's primary is connected again). */
  #probeNow(): void {
    if (this.closed || this.#skipFor === 0 || this.#probeOut) return;
    this.#scheduleProbe(0);
  }

  /** Cluster: a node's client is ready (the lost one back, or a promoted replica): probe if it serves the key. */
  readonly #onNodeReady = (): void => {
    if (this.#skipFor !== 0 && !this.#slotDown(this.#probeKey)) this.#probeNow();
  };

  #authError(operation: RedisOperation, detail: string, cause?: unknown): RedisTokenStoreError {
    const message = `Redis refused the credentials (${detail.slice(0, 120)}): check the user and password in the Redis URL or of the client you passed (an ACL user needs them both); ${this.owned ? 'the store keeps retrying, backing off up to 60 s, and ' : ''}the token provider falls back to its own token request meanwhile.`;
    const error = new RedisTokenStoreError('ERR_REDIS_AUTH', message, { cause });
    this.#settings.emit({ type: 'redis-error', operation, code: error.code, message });
    return error;
  }

  async ensureOpen(operation: RedisOperation): Promise<void> {
    if (this.closed) throw this.closedError();
    await this.firstReady;
    const left = this.#skipUntil - Date.now();
    if (left > 0) {
      throw this.unavailable(
        operation,
        `Redis is skipped for another ${left} ms (${this.#skipReason}); the token provider serves from memory or falls back to its own token request meanwhile.`,
      );
    }
    if (!this.usable) {
      this.noteDown(new Error('not connected'));
      if (this.#authRefusal !== undefined) throw this.#authError(operation, this.#authRefusal);
      throw this.unavailable(
        operation,
        this.owned
          ? `Redis is not reachable (the store reconnects by itself, backing off up to ${this.#settings.maxReconnectDelayMs} ms); the token provider falls back to its own token request meanwhile.`
          : this.client.isOpen
            ? 'the Redis client passed as { client } is not connected (it is reconnecting); the token provider falls back to its own token request meanwhile.'
            : 'the Redis client passed as { client } is not open: call `await client.connect()` before using the store.',
      );
    }
  }

  async send<T>(operation: RedisOperation, args: string[]): Promise<T> {
    await this.ensureOpen(operation);
    const { commandTimeoutMs, emit } = this.#settings;
    const key = firstKeyOf(args);
    if (this.#slotDown(key)) {
      this.#probeKey = key;
      const reason = `the connection to the cluster node serving ${args[0]}'s key is lost`;
      this.skip(reason);
      throw this.unavailable(
        operation,
        `${reason} (node-redis reconnects it or finds its successor); the token provider falls back to its own token request meanwhile.`,
      );
    }
    try {
      // node-redis's own `timeout` stops waiting only for a command not yet written to the socket; the
      // store's timer covers a command written to a server that never answers (SIGSTOP, a black hole).
      const reply = (await withDeadline(this.dispatch(args), commandTimeoutMs, args[0] as string)) as T;
      // A client that came back without saying so (a sentinel's new primary): an answer is proof.
      if (!this.#up) this.noteUp();
      return reply;
    } catch (cause) {
      // EVALSHA of a script the server has not seen yet: evaluate() sends the script itself.
      if (args[0] === 'EVALSHA' && /^NOSCRIPT/.test(messageOf(cause))) throw cause;
      if (isErrorReply(cause)) {
        if (isAuthRefusal(cause)) throw this.#authError(operation, messageOf(cause), cause);
        const message = `Redis refused ${args[0]}: ${messageOf(cause)}; check the Redis user's permissions and that the server is a writable primary.`;
        emit({ type: 'redis-error', operation, code: 'ERR_REDIS_COMMAND', message });
        throw new RedisTokenStoreError('ERR_REDIS_COMMAND', message, { cause });
      }
      const timedOut = cause instanceof CommandTimeout;
      this.#probeKey = firstKeyOf(args) ?? this.#probeKey;
      this.skip(timedOut ? `no answer to ${args[0]} within ${commandTimeoutMs} ms` : messageOf(cause));
      throw this.unavailable(
        operation,
        timedOut
          ? `Redis did not answer ${args[0]} within ${commandTimeoutMs} ms (commandTimeoutMs; a hung or overloaded server?); the token provider falls back to its own token request meanwhile.`
          : `Redis failed ${args[0]} (${messageOf(cause)}); the token provider falls back to its own token request meanwhile.`,
        cause,
      );
    }
  }

  /** Runs a script by its SHA-1, sending its source when the server has not seen it yet. */
  async evaluate<T>(operation: RedisOperation, script: Script, keys: string[], args: string[]): Promise<T> {
    const tail = [String(keys.length), ...keys, ...args];
    try {
      return await this.send<T>(operation, ['EVALSHA', script.sha1, ...tail]);
    } catch (error) {
      if (error instanceof RedisTokenStoreError || !/^NOSCRIPT/.test(messageOf(error))) throw error;
      return await this.send<T>(operation, ['EVAL', script.source, ...tail]);
    }
  }

  /** Stops the probe timer and the Sentinel watch (close()). */
  stopProbe(): void {
    if (this.#probe !== undefined) clearTimeout(this.#probe);
    if (this.#catchUp !== undefined) this.client.off('node-ready', this.#onNodeReady);
    if (this.#watch !== undefined) {
      this.#watch.stop();
      this.client.off('ready', this.#watch.onClientReady);
    }
  }
}
