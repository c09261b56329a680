import { messageOf, withDeadline } from './deadline.js';
import type { Emit, RedisClient, RedisCluster } from './options.js';
import { clusterSlot } from './redis-keys.js';

/** What the catch-up reads of a node-redis cluster (6.x): its slot table and its primaries. */
interface ClusterNode {
  address?: string;
  client?: RedisClient;
}
interface ClusterView {
  slots?: ({ master?: ClusterNode } | undefined)[];
  masters?: ClusterNode[];
  /** node-redis's own topology refresh (the one a MOVED reply runs); absent from other versions. */
  _slots?: { rediscover?: (startWith?: RedisClient) => Promise<void> };
}

export interface ClusterCatchUpHooks {
  emit: Emit;
  commandTimeoutMs: number;
  connectTimeoutMs: number;
}

/**
 * Cluster: has the slot of a lost primary been taken over, and does node-redis know it yet?
 *
 * node-redis (6.3.1) reads the cluster's topology again only on a reconnection attempt of a lost
 * node's client, once `topologyRefreshOnReconnectionAttemptStrategy` (default 5 s) has passed since the
 * last refresh: reconnecting every 500 ms, it is on the promoted replica 0.3–1 s after the promotion,
 * later when its reconnections back off further. The store asks itself instead, each probe: one
 * `EXISTS <key>` to another primary, which answers `MOVED <slot> <address>` — the slot's owner as the
 * cluster knows it. An owner other than node-redis's means the promotion happened: the store runs
 * node-redis's own refresh (the one a MOVED reply to a command runs), starting from that primary, and
 * resolves true once the slot's new primary is connected. One check at a time; each bounded.
 */
export class ClusterCatchUp {
  readonly #cluster: ClusterView;
  readonly #hooks: ClusterCatchUpHooks;
  #running: Promise<boolean> | undefined;
  /** Reported once: this node-redis has no refresh the store can run. */
  #unsupported = false;

  constructor(cluster: RedisCluster, hooks: ClusterCatchUpHooks) {
    this.#cluster = cluster as unknown as ClusterView;
    this.#hooks = hooks;
  }

  /** Resolves true when node-redis was behind the cluster about `key`'s slot and has caught up. */
  check(key: string): Promise<boolean> {
    this.#running ??= this.#check(key).finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #check(key: string): Promise<boolean> {
    const { commandTimeoutMs, connectTimeoutMs, emit } = this.#hooks;
    const owner = this.#cluster.slots?.[clusterSlot(key)]?.master;
    const witness = this.#cluster.masters?.find((m) => m !== owner && m.client?.isReady === true)?.client;
    if (owner === undefined || witness === undefined) return false;
    const answer = await withDeadline(witness.sendCommand(['EXISTS', key]), commandTimeoutMs, 'EXISTS').then(
      () => '',
      (error: unknown) => messageOf(error),
    );
    const moved = /^MOVED \d+ (\S+)$/.exec(answer)?.[1];
    // No promotion yet (the cluster still names the lost primary), or not a redirection at all.
    if (moved === undefined || moved === owner.address) return false;
    const slots = this.#cluster._slots;
    if (typeof slots?.rediscover !== 'function') {
      if (!this.#unsupported) {
        this.#unsupported = true;
        emit({
          type: 'cluster-refresh',
          message: `the cluster moved the slot to ${moved}, but this node-redis has no topology refresh the store can run; the store waits for node-redis's own (topologyRefreshOnReconnectionAttemptStrategy)`,
        });
      }
      return false;
    }
    try {
      await withDeadline(slots.rediscover(witness), connectTimeoutMs, 'a topology refresh');
    } catch (error) {
      emit({
        type: 'cluster-refresh',
        message: `the cluster moved the slot to ${moved}; the topology refresh failed (${messageOf(error).slice(0, 120)}), the store tries again at its next probe`,
      });
      return false;
    }
    const now = this.#cluster.slots?.[clusterSlot(key)]?.master;
    const caughtUp = now?.address === moved && now.client?.isReady === true;
    emit({
      type: 'cluster-refresh',
      message: caughtUp
        ? `the cluster moved the slot to ${moved}: node-redis's topology refreshed by the store, the new primary is connected`
        : `the cluster moved the slot to ${moved}: node-redis's topology refreshed by the store, the new primary not connected yet`,
    });
    return caughtUp;
  }
}
