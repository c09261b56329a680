// The store through a node-redis Sentinel client (createSentinel): a real primary, replica and
// sentinel started by the test, including a failover of the primary.
import type { StoredToken } from '@partner-lending/auth';
import { createSentinel } from 'redis';
import { describe, expect, it } from 'vitest';
import { createRedisTokenStore, type RedisTokenStoreEvent } from '../src/index.js';
import { sleep } from './support/loop-fleet.js';
import { providerCacheKey } from './support/provider-key.js';
import { PRIMARY_NAME, startSentinel } from './support/redis-sentinel.mjs';
import { expectFleetThroughFailover, topologyFixture } from './support/topology-suite.js';

const fixture = topologyFixture(startSentinel);
const { encryptionKey, providerOn } = fixture;

async function connectedSentinel() {
  const sentinel = createSentinel({
    name: PRIMARY_NAME,
    sentinelRootNodes: fixture.servers.sentinelRootNodes,
  });
  sentinel.on('error', () => {});
  await sentinel.connect();
  return fixture.track(sentinel);
}

describe('Redis Sentinel (a primary, a replica, three sentinels)', { timeout: 110_000 }, () => {
  it('two cold "processes" share one token request; after the primary is killed and replaced, they share again', async () => {
    const events: RedisTokenStoreEvent[] = [];
    const a = createRedisTokenStore({
      client: await connectedSentinel(),
      encryptionKey,
      onEvent: (e) => events.push(e),
    });
    const b = createRedisTokenStore({
      client: await connectedSentinel(),
      encryptionKey,
      onEvent: (e) => events.push(e),
    });
    const { servers, tokens } = fixture;
    const key = await providerCacheKey(tokens);
    const coldPair = async () => {
      await a.delete(key);
      const before = tokens.tokenRequests();
      const [ta, tb] = await Promise.all([providerOn(a).getToken(), providerOn(b).getToken()]);
      return ta.accessToken === tb.accessToken && tokens.tokenRequests() - before === 1;
    };
    expect(await coldPair()).toBe(true);
    expect(events.filter((e) => e.type === 'lock-acquired')).toHaveLength(1);
    const primary = await servers.primaryPort();
    await servers.kill(primary);
    let failed = 0;
    let calls = 0;
    const until = Date.now() + 5_000;
    while (Date.now() < until) {
      calls++;
      await providerOn(calls % 2 ? a : b)
        .getToken()
        .catch(() => failed++);
      await sleep(100);
    }
    expect(failed).toBe(0);
    let shared = false;
    for (let attempt = 0; attempt < 30 && !shared; attempt++) {
      shared = await coldPair().catch(() => false);
      if (!shared) await sleep(500);
    }
    expect(await servers.primaryPort()).not.toBe(primary);
    expect(shared).toBe(true);
    await a.close();
    await b.close();
    // The killed primary comes back as a replica: the next test fails over again.
    await servers.restart(primary);
  });

  it('the store follows +switch-master itself: back on Redis before the Sentinel client finds the new primary; the control (sentinel: false) waits for the client', async () => {
    const { servers } = fixture;
    const t: Record<string, number> = {};
    const mark = (name: string) => () => {
      t[name] ??= Date.now();
    };
    const following = await connectedSentinel();
    const control = await connectedSentinel();
    const storeEvents: RedisTokenStoreEvent[] = [];
    const follows = createRedisTokenStore({
      client: following,
      encryptionKey,
      sentinel: { name: PRIMARY_NAME, sentinelRootNodes: servers.sentinelRootNodes },
      onEvent: (e) => {
        storeEvents.push(e);
        if (e.type === 'redis-ready') mark('followsBack')();
      },
    });
    const waits = createRedisTokenStore({
      client: control,
      encryptionKey,
      sentinel: false,
      onEvent: (e) => e.type === 'redis-ready' && mark('controlBack')(),
    });
    const key = 'switch-master';
    const token: StoredToken = {
      accessToken: 'a.b.c',
      tokenType: 'Bearer',
      expiresAt: Date.now() + 60_000,
      obtainedAt: Date.now(),
      grantedScopes: [],
      partnerId: 'p',
      issuer: 'https://issuer.invalid',
      jti: 'switch-master',
    };
    await follows.set(key, token, 60_000);
    // The replica has it before the kill (replication is asynchronous: a write can be lost with its primary).
    await servers.replicated();
    // Both stores in use (as under a fleet), so that both notice the loss.
    let stop = false;
    const use = async (store: typeof follows) => {
      while (!stop) {
        await store.get(key).catch(() => {});
        await sleep(50);
      }
    };
    const using = [use(follows), use(waits)];
    await sleep(300);
    // Prepended: the client's own `ready` is marked before any listener of the store runs for the same
    // event, so a store that comes back with it is never 1 ms "before" it when the clock ticks between.
    following.prependOnceListener('ready', mark('followingClientReady'));
    control.prependOnceListener('ready', mark('controlClientReady'));
    const primary = await servers.primaryPort();
    try {
      await servers.kill(primary);
      for (let i = 0; i < 300 && (t.followsBack === undefined || t.controlClientReady === undefined); i++) {
        await sleep(100);
      }
      stop = true;
      await Promise.all(using);
      console.log(
        `sentinel +switch-master: the following store back ${(t.followingClientReady ?? Number.NaN) - (t.followsBack ?? Number.NaN)} ms before its client; the control back ${(t.controlBack ?? Number.NaN) - (t.controlClientReady ?? Number.NaN)} ms after its client said ready`,
      );
      expect(storeEvents.map((e) => e.type)).toContain('sentinel-watch');
      expect(t.followsBack).toBeDefined();
      // The store served the new primary before node-redis was on it…
      expect(t.followsBack).toBeLessThan(t.followingClientReady ?? Number.POSITIVE_INFINITY);
      // …and read the token written before the failover there (the replica had it).
      expect((await follows.get(key))?.accessToken).toBe(token.accessToken);
      // The control: without the watch, the store is back only with the client's own `ready`.
      expect(t.controlBack).toBeGreaterThanOrEqual(t.controlClientReady ?? Number.POSITIVE_INFINITY);
    } finally {
      stop = true;
      await follows.close();
      await waits.close();
      // The killed primary comes back as a replica even when an expectation failed: the next test
      // fails over again and needs one.
      await servers.restart(primary);
    }
  });

  it('a fleet through a failover (the primary SIGKILLed): no process crashes, with or without an error listener of its own; 0 expired, 0 foreign, deadlines held, back on Redis after the promotion', async () => {
    const { servers } = fixture;
    await expectFleetThroughFailover(fixture, {
      job: { topology: 'sentinel', sentinelRootNodes: servers.sentinelRootNodes, name: PRIMARY_NAME },
      // The negative control: the same client without the store and without a listener dies of it.
      controls: 1,
      kill: async () => {
        const primary = await servers.primaryPort();
        await servers.kill(primary);
        return primary;
      },
      primary: () => servers.primaryPort(),
    });
  });
});
