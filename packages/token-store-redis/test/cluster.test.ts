// The store on a real Redis Cluster: 3 primaries and 3 replicas started by the test, through a
// node-redis cluster client the application creates (createCluster) — including a primary failover.
import type { StoredToken } from '@partner-lending/auth';
import { createCluster } from 'redis';
import { describe, expect, it } from 'vitest';
import { createRedisTokenStore, DEFAULT_NAMESPACE, type RedisTokenStoreEvent } from '../src/index.js';
import { clusterSlot, redisNames } from '../src/redis-keys.js';
import { sleep } from './support/loop-fleet.js';
import { providerCacheKey } from './support/provider-key.js';
import { startCluster } from './support/redis-cluster.mjs';
import { expectFleetThroughFailover, topologyFixture } from './support/topology-suite.js';

const fixture = topologyFixture(startCluster);
const { encryptionKey, providerOn } = fixture;

async function connectedCluster() {
  const cluster = createCluster({
    rootNodes: fixture.servers.rootNodes,
    defaults: { socket: { connectTimeout: 1_000 } },
  });
  cluster.on('error', () => {});
  await cluster.connect();
  return fixture.track(cluster);
}

describe('Redis Cluster (3 primaries, 3 replicas)', { timeout: 110_000 }, () => {
  it('two "processes" on a cold cache share one token request: scripts (hash-tagged keys) and notices work on a cluster', async () => {
    const events: RedisTokenStoreEvent[] = [];
    const a = createRedisTokenStore({
      client: await connectedCluster(),
      encryptionKey,
      onEvent: (e) => events.push(e),
    });
    const b = createRedisTokenStore({
      client: await connectedCluster(),
      encryptionKey,
      onEvent: (e) => events.push(e),
    });
    const { tokens } = fixture;
    const key = await providerCacheKey(tokens);
    await a.delete(key);
    const before = tokens.tokenRequests();
    const [ta, tb] = await Promise.all([providerOn(a).getToken(), providerOn(b).getToken()]);
    expect(tb.accessToken).toBe(ta.accessToken);
    expect(tokens.tokenRequests() - before).toBe(1);
    // One fetched, the other waited for its notice (pub/sub across the cluster), nothing failed.
    expect(events.filter((e) => e.type === 'lock-acquired')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'lock-waiting')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'redis-error')).toEqual([]);
    await a.close();
    await b.close();
  });

  it("the store's slot of a key is Redis's own (CLUSTER KEYSLOT): hash tags, empty tags, plain keys", async () => {
    const cluster = await connectedCluster();
    const keys = [
      redisNames(DEFAULT_NAMESPACE, 'a provider cache key').token,
      redisNames('other:', 'another').lock,
      'foo',
      '{user1000}.following',
      'a{}b{c}',
      'x{y',
      'é{ü}',
    ];
    for (const key of keys) {
      const slot = await cluster.sendCommand(undefined, true, ['CLUSTER', 'KEYSLOT', key]);
      expect([key, clusterSlot(key)]).toEqual([key, Number(slot)]);
    }
    // Not vacuous: the keys land on different slots.
    expect(new Set(keys.map(clusterSlot)).size).toBeGreaterThan(4);
  });

  it('a primary failover: no call fails during it, and afterwards the fleet shares one request again', async () => {
    const storeEvents: RedisTokenStoreEvent[] = [];
    const a = createRedisTokenStore({
      client: await connectedCluster(),
      encryptionKey,
      onEvent: (e) => storeEvents.push(e),
    });
    const b = createRedisTokenStore({ client: await connectedCluster(), encryptionKey });
    const { tokens } = fixture;
    const key = await providerCacheKey(tokens);
    const names = redisNames(DEFAULT_NAMESPACE, key);
    await providerOn(a).getToken();
    const { servers } = fixture;
    const primary = await servers.primaryOf(names.token);
    await servers.kill(primary);
    // Fresh providers (cold memory, as new processes) keep getting tokens while the cluster fails over.
    let calls = 0;
    let failed = 0;
    let slowest = 0;
    const until = Date.now() + 5_000;
    while (Date.now() < until) {
      calls++;
      const t0 = Date.now();
      await providerOn(calls % 2 ? a : b)
        .getToken()
        .catch(() => failed++);
      slowest = Math.max(slowest, Date.now() - t0);
      await sleep(100);
    }
    await servers.waitHealthy();
    expect(await servers.primaryOf(names.token)).not.toBe(primary);
    expect(calls).toBeGreaterThan(8);
    expect(failed).toBe(0);
    // At most one command timeout (1 s) and one token request (150 ms) per call: Redis is skipped after.
    expect(slowest).toBeLessThan(2_500);
    // Once node-redis has found the new primary, two cold "processes" share one request again.
    let shared = false;
    for (let attempt = 0; attempt < 30 && !shared; attempt++) {
      await a.delete(key).catch(() => {});
      const before = tokens.tokenRequests();
      const [ta, tb] = await Promise.all([providerOn(a).getToken(), providerOn(b).getToken()]);
      shared = ta.accessToken === tb.accessToken && tokens.tokenRequests() - before === 1;
      if (!shared) await sleep(500);
    }
    expect(shared).toBe(true);
    // Calls for the lost primary's slot failed at once (its connection down), not after a command timeout.
    expect(
      storeEvents.some((e) => e.type === 'redis-error' && e.message.includes('cluster node serving')),
      JSON.stringify(storeEvents.slice(0, 20)),
    ).toBe(true);
    const counts = new Map<string, number>();
    for (const e of storeEvents) counts.set(e.type, (counts.get(e.type) ?? 0) + 1);
    console.log(
      `cluster failover: primary :${primary} killed, ${calls} cold calls during it, ${failed} failed, slowest ${slowest} ms; store events: ${JSON.stringify(Object.fromEntries(counts))}`,
    );
    await a.close();
    await b.close();
    // The killed primary comes back as a replica of its successor: the next test fails over again.
    await servers.restart(primary);
  });

  it('the store finds a promoted primary itself: back on Redis (the token written before the failover read there) while node-redis alone still names the lost primary — the control, the same client settings without a store', async () => {
    const { servers } = fixture;
    // node-redis on its own reads the topology again only on a reconnection attempt of the lost node
    // 10 s after the first (its attempts 2 s apart): a store back before that found the primary itself.
    const settings = {
      rootNodes: servers.rootNodes,
      defaults: { socket: { connectTimeout: 1_000, reconnectStrategy: () => 2_000 } },
      topologyRefreshOnReconnectionAttemptStrategy: 10_000,
    };
    const connect = async () => {
      const cluster = createCluster(settings);
      cluster.on('error', () => {});
      await cluster.connect();
      return fixture.track(cluster);
    };
    const [client, control] = [await connect(), await connect()];
    const events: RedisTokenStoreEvent[] = [];
    const store = createRedisTokenStore({ client, encryptionKey, onEvent: (e) => events.push(e) });
    const key = 'catch-up';
    const tokenKey = redisNames(DEFAULT_NAMESPACE, key).token;
    const stored: StoredToken = {
      accessToken: 'a.b.c',
      tokenType: 'Bearer',
      expiresAt: Date.now() + 120_000,
      obtainedAt: Date.now(),
      grantedScopes: [],
      partnerId: 'p',
      issuer: 'https://issuer.invalid',
      jti: 'catch-up',
    };
    await store.set(key, stored, 120_000);
    // The replica has it before the kill (replication is asynchronous).
    expect(Number(await client.sendCommand(tokenKey, false, ['WAIT', '1', '5000']))).toBe(1);
    const primary = await servers.primaryOf(tokenKey);
    const slot = clusterSlot(tokenKey);
    const controlOwner = () =>
      (control as unknown as { slots: { master: { address: string } }[] }).slots[slot]?.master.address;
    expect(controlOwner()).toBe(`127.0.0.1:${primary}`);
    await servers.kill(primary);
    try {
      let back: StoredToken | undefined;
      let controlWhenBack: string | undefined;
      for (let i = 0; i < 300 && back === undefined; i++) {
        back = await store.get(key).catch(() => undefined);
        if (back === undefined) await sleep(50);
        else controlWhenBack = controlOwner();
      }
      console.log(
        `cluster catch-up: ${events.filter((e) => e.type === 'cluster-refresh').map((e) => (e as { message: string }).message)}`,
      );
      expect(back?.jti).toBe(stored.jti);
      expect(await servers.primaryOf(tokenKey)).not.toBe(primary);
      // The control: node-redis alone still named the lost primary when the store was back.
      expect(controlWhenBack).toBe(`127.0.0.1:${primary}`);
      expect(events.map((e) => e.type)).toContain('cluster-refresh');
    } finally {
      await store.close();
      // The killed primary comes back as a replica of its successor: the next test fails over again.
      await servers.restart(primary);
    }
  });

  it('a fleet through a failover (the primary SIGKILLed): no process crashes, with or without an error listener of its own; 0 expired, 0 foreign, deadlines held, back on Redis after the promotion', async () => {
    const { servers, shortTokens } = fixture;
    const key = redisNames(DEFAULT_NAMESPACE, await providerCacheKey(shortTokens)).token;
    await expectFleetThroughFailover(fixture, {
      job: { topology: 'cluster', rootNodes: servers.rootNodes },
      kill: async () => {
        const primary = await servers.primaryOf(key);
        await servers.kill(primary);
        return primary;
      },
      primary: () => servers.primaryOf(key),
    });
  });
});
