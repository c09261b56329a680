import { createClient } from 'redis';
import { messageOf, withDeadline } from './deadline.js';
import type { Emit, RedisClient, RedisSentinel, SentinelFollowOptions } from './options.js';

/** A node as node-redis names one (`getMasterNode()`, `getSentinelNode()`, `sentinelRootNodes`). */
interface NodeAddress {
  host: string;
  port: number;
}

const addressOf = (node: NodeAddress) => `${node.host}:${node.port}`;

/** Attempts to reach an announced primary (each bounded by connectTimeoutMs), 200 ms apart. */
const FOLLOW_ATTEMPTS = 3;

/** Sentinels watched at once: the client's own and the first others known. */
const MAX_WATCHED = 3;

/** Longest the watch waits for an announced primary to say `ROLE` master (it is normally at once). */
const ROLE_WAIT_MS = 2_000;

export interface SentinelWatchHooks {
  emit: Emit;
  commandTimeoutMs: number;
  connectTimeoutMs: number;
  /** The notice channel and its handler: the direct path carries the notices too. */
  channel: string;
  onNotice: (message: string) => void;
  /** A verified primary serves the store's commands (the store is back on Redis). */
  onDirect: () => void;
  /** The direct connection was lost: Redis is skipped and probed as after any loss. */
  onDirectLost: (reason: string) => void;
}

/**
 * Follows a Sentinel failover by itself. node-redis's Sentinel client takes its new primary from the
 * sentinel only once the sentinel no longer flags it `disconnected` (the sentinel connects to a new
 * primary up to a second after announcing it) and retries its discovery a fixed second apart: it is
 * ready 1–2 s after the promotion. The sentinels announce the promotion at once (`+switch-master`,
 * pub/sub): the watch subscribes to it on a connection of its own to a sentinel, connects to the
 * announced primary, checks that it says `ROLE` master, and serves the store's commands (and notices)
 * there until the Sentinel client is ready on it; then the direct connections are closed.
 */
export class SentinelWatch {
  readonly #sentinel: RedisSentinel;
  readonly #options: SentinelFollowOptions;
  readonly #hooks: SentinelWatchHooks;
  /** The `+switch-master` subscriptions, by sentinel address. */
  readonly #watchers = new Map<string, RedisClient>();
  /** Sentinels already reported as not reachable (reported once). */
  readonly #unwatchable = new Set<string>();
  /** The primary the Sentinel client was last ready on (address as node-redis connects to it). */
  #known: string | undefined;
  /** A verified new primary and its notice connection, while the Sentinel client is not on it yet. */
  #direct: { address: string; client: RedisClient; sub: RedisClient | undefined } | undefined;
  /** The address being connected to (one attempt at a time; a newer announcement wins). */
  #pending: string | undefined;
  #stopped = false;
  /**
   * Never connected: its duplicates are the watch's connections. node-redis builds a client class (every
   * command of every module) for each `createClient`, tens to hundreds of milliseconds on a busy host;
   * built once here, a failover pays none of it.
   */
  #template: RedisClient | undefined;

  constructor(sentinel: RedisSentinel, options: SentinelFollowOptions, hooks: SentinelWatchHooks) {
    this.#sentinel = sentinel;
    this.#options = options;
    this.#hooks = hooks;
  }

  /** A new (unconnected) client with `options`, from the template's class. */
  #client(options: object): RedisClient {
    this.#template ??= createClient({}) as RedisClient;
    return this.#template.duplicate(options) as RedisClient;
  }

  /** The verified primary's connection, while the Sentinel client is not back on it. */
  get direct(): RedisClient | undefined {
    return this.#direct?.client.isReady ? this.#direct.client : undefined;
  }

  /** Notices are carried by the direct path (while it serves). */
  get noticesUp(): boolean {
    return this.#direct?.sub?.isReady === true;
  }

  /** The Sentinel client said `ready`: note its primary; once it is on the new one, the direct path goes. */
  readonly onClientReady = (): void => {
    const master = this.#masterNode();
    if (master !== undefined) this.#known = master;
    if (this.#direct !== undefined && master !== undefined) this.#dropDirect();
    this.#watch();
  };

  /** Watches at once, the client ready or not (a process started during a failover follows it too). */
  start(): void {
    if (this.#sentinel.isReady) this.onClientReady();
    else this.#watch();
  }

  #masterNode(): string | undefined {
    const node = this.#sentinel.getMasterNode() as NodeAddress | undefined;
    return node?.host !== undefined ? addressOf(node) : undefined;
  }

  /** The sentinels to watch, the Sentinel client's own first. */
  #candidates(): NodeAddress[] {
    const own = (this.#sentinel as { getSentinelNode?: () => NodeAddress | undefined }).getSentinelNode?.();
    const all = [...(own?.host !== undefined ? [own] : []), ...(this.#options.sentinelRootNodes ?? [])];
    const seen = new Set<string>();
    return all.filter((n) => !seen.has(addressOf(n)) && seen.add(addressOf(n)));
  }

  /**
   * A subscription to `+switch-master` on each sentinel known (at most MAX_WATCHED): the sentinel that
   * led the failover announces it first, the others up to a couple of seconds later (their hello
   * messages). A sentinel that cannot be reached is tried again every few seconds, reported once.
   */
  #watch(): void {
    if (this.#stopped) return;
    for (const node of this.#candidates().slice(0, MAX_WATCHED)) {
      const address = addressOf(node);
      if (this.#watchers.has(address)) continue;
      const options = this.#options.sentinelClientOptions ?? {};
      const watcher = this.#client({
        ...options,
        socket: {
          ...(options as { socket?: object }).socket,
          host: node.host,
          port: node.port,
          connectTimeout: this.#hooks.connectTimeoutMs,
          reconnectStrategy: (retries: number) => Math.min(100 * 2 ** retries, 2_000),
        },
      });
      this.#watchers.set(address, watcher);
      watcher.on('error', () => {});
      watcher
        .connect()
        .then(() => watcher.subscribe('+switch-master', this.#onSwitch))
        .catch((error: unknown) => {
          if (this.#watchers.get(address) !== watcher) return;
          if (!this.#unwatchable.has(address)) {
            this.#unwatchable.add(address);
            this.#hooks.emit({
              type: 'sentinel-watch',
              message: `could not watch the sentinel ${address} for +switch-master (${messageOf(error).slice(0, 120)}); the store follows the other sentinels, or the Sentinel client's own discovery`,
            });
          }
          this.#watchers.delete(address);
          if (watcher.isOpen) watcher.destroy();
          if (!this.#stopped) setTimeout(() => this.#watch(), 5_000).unref?.();
        });
    }
  }

  /** `+switch-master <name> <old ip> <old port> <new ip> <new port>`, from any sentinel. */
  readonly #onSwitch = (message: string): void => {
    const [name, oldHost, oldPort, newHost, newPort] = message.split(' ');
    if (newHost === undefined || newPort === undefined || !/^\d{1,5}$/.test(newPort)) return;
    const mapped = (host: string, port: string) => this.#map(host, Number(port));
    if (this.#options.name !== undefined) {
      if (name !== this.#options.name) return;
    } else {
      // Without the monitored name: a switch away from the primary the client is on is ours.
      if (oldHost === undefined || oldPort === undefined || this.#known !== mapped(oldHost, oldPort)) return;
    }
    const address = mapped(newHost, newPort);
    if (address === this.#masterNode() || address === this.#direct?.address || address === this.#pending)
      return;
    void this.#follow(address);
  };

  #map(host: string, port: number): string {
    const map = this.#options.nodeAddressMap;
    const key = `${host}:${port}`;
    const node = typeof map === 'function' ? map(key) : map?.[key];
    return addressOf(node ?? { host, port });
  }

  async #follow(address: string, attempt = 1): Promise<void> {
    this.#pending = address;
    const [host, port] = [
      address.slice(0, address.lastIndexOf(':')),
      Number(address.slice(address.lastIndexOf(':') + 1)),
    ];
    const { commandTimeoutMs, connectTimeoutMs, emit } = this.#hooks;
    const options = this.#options.nodeClientOptions ?? {};
    const client = this.#client({
      ...options,
      disableOfflineQueue: true,
      socket: {
        ...(options as { socket?: object }).socket,
        host,
        port,
        connectTimeout: connectTimeoutMs,
        reconnectStrategy: false,
      },
    });
    let sub: RedisClient | undefined;
    client.on('error', () => {});
    try {
      await withDeadline(client.connect(), connectTimeoutMs, 'a connection');
      // The sentinel announces a primary it promoted: check it says so before any write goes there.
      for (const until = Date.now() + ROLE_WAIT_MS; ; ) {
        const role = (await withDeadline(
          client.sendCommand(['ROLE']),
          commandTimeoutMs,
          'ROLE',
        )) as unknown[];
        if (role?.[0] === 'master') break;
        if (Date.now() > until) throw new Error(`it still says ROLE ${String(role?.[0])}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      sub = client.duplicate() as RedisClient;
      sub.on('error', () => {});
      await withDeadline(sub.connect(), connectTimeoutMs, 'a connection');
      await withDeadline(
        sub.subscribe(this.#hooks.channel, this.#hooks.onNotice),
        commandTimeoutMs,
        'SUBSCRIBE',
      );
    } catch (error) {
      if (client.isOpen) client.destroy();
      if (sub?.isOpen) sub.destroy();
      // A starved or briefly unreachable host: try again shortly, while the client is not there yet.
      if (
        attempt < FOLLOW_ATTEMPTS &&
        !this.#stopped &&
        this.#pending === address &&
        this.#masterNode() !== address
      ) {
        setTimeout(() => void this.#follow(address, attempt + 1), 200).unref?.();
        return;
      }
      if (this.#pending === address) this.#pending = undefined;
      emit({
        type: 'sentinel-watch',
        message: `could not follow the announced primary ${address} after ${attempt} attempts (${messageOf(error).slice(0, 120)}); the store follows the Sentinel client's own discovery`,
      });
      return;
    }
    // Stopped, superseded by a newer announcement, or the client got there first: not needed.
    if (this.#stopped || this.#pending !== address || this.#masterNode() === address) {
      client.destroy();
      sub.destroy();
      if (this.#pending === address) this.#pending = undefined;
      return;
    }
    this.#pending = undefined;
    this.#dropDirect();
    const direct = { address, client, sub };
    this.#direct = direct;
    const lost = () => {
      if (this.#direct !== direct) return;
      this.#dropDirect();
      this.#hooks.onDirectLost(`the connection to the announced primary ${address} was lost`);
    };
    client.on('end', lost);
    client.on('error', lost);
    emit({
      type: 'sentinel-watch',
      message: `following the announced primary ${address} until the Sentinel client is on it`,
    });
    this.#hooks.onDirect();
  }

  /** No new command goes there; those under way finish (a graceful close, bounded), then it is closed. */
  #dropDirect(): void {
    const direct = this.#direct;
    if (direct === undefined) return;
    this.#direct = undefined;
    for (const c of [direct.client, direct.sub]) {
      if (!c?.isOpen) continue;
      withDeadline(c.close(), this.#hooks.commandTimeoutMs, 'QUIT').catch(() => {
        if (c.isOpen) c.destroy();
      });
    }
  }

  stop(): void {
    this.#stopped = true;
    this.#pending = undefined;
    this.#dropDirect();
    for (const watcher of this.#watchers.values()) if (watcher.isOpen) watcher.destroy();
    this.#watchers.clear();
  }
}
