// The store through a node-redis Sentinel client (createSentinel): a real primary, replica and
// sentinel started by the test, including a failover of the primary.
import { randomBytes } from 'node:crypto';
import { createTokenProvider, type TokenStore } from '@partner-lending/auth';
import { createSentinel } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisTokenStore, type RedisTokenStoreEvent } from '../src/index.js';
import { describeFailover, runFailover } from './support/failover-fleet.mjs';
import { sleep } from './support/loop-fleet.js';
import { providerCacheKey } from './support/provider-key.js';
import { PRIMARY_NAME, type SentinelServers, startSentinel } from './support/redis-sentinel.mjs';
import { CLIENT_ID, CLIENT_SECRET, startTokenServer, type TokenServer } from './support/token-server.mjs';

const encryptionKey = randomBytes(32).toString('base64');
let servers: SentinelServers;
let tokens: TokenServer;
/** 2-s tokens for the fleet, as the partners run them. */
let shortTokens: TokenServer;
const clients: { close(): Promise<unknown>; destroy(): void; readonly isOpen: boolean }[] = [];

beforeAll(async () => {
  servers = await startSentinel();
  tokens = await startTokenServer({ delayMs: 150 });
  shortTokens = await startTokenServer({ ttlSeconds: 2, delayMs: 50 });
}, 60_000);

afterAll(async () => {
  for (const c of clients) {
    await Promise.race([c.close().catch(() => {}), sleep(2_000)]);
    if (c.isOpen) c.destroy();
  }
  await tokens?.close();
  await shortTokens?.close();
  await servers?.stop();
});

async function connectedSentinel() {
  const sentinel = createSentinel({ name: PRIMARY_NAME, sentinelRootNodes: servers.sentinelRootNodes });
  sentinel.on('error', () => {});
  await sentinel.connect();
  clients.push(sentinel);
  return sentinel;
}

const providerOn = (store: TokenStore) =>
  createTokenProvider({
    tokenUrl: tokens.tokenUrl,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    audience: tokens.audience,
    dangerouslyAllowInsecureHttp: true,
    store,
  });

describe('Redis Sentinel (a primary, a replica, a sentinel)', { timeout: 110_000 }, () => {
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

  it('a fleet through a failover (the primary SIGKILLed): no process crashes, with or without an error listener of its own; 0 expired, 0 foreign, deadlines held, back on Redis after the promotion', async () => {
    const outcome = await runFailover({
      job: {
        topology: 'sentinel',
        sentinelRootNodes: servers.sentinelRootNodes,
        name: PRIMARY_NAME,
        tokenUrl: shortTokens.tokenUrl,
        audience: shortTokens.audience,
        clientId: CLIENT_ID,
        clientSecret: CLIENT_SECRET,
        encryptionKey,
        durationMs: 11_000,
        timeoutMs: 3_000,
        callers: 5,
      },
      processes: 4,
      // Half the processes add no 'error' listener of their own: the store's keeps them alive.
      listeners: (i) => i % 2 === 0,
      // The negative control: the same client without the store and without a listener dies of it.
      controls: 1,
      tokens: shortTokens,
      killAtMs: 3_500,
      kill: async () => {
        const primary = await servers.primaryPort();
        await servers.kill(primary);
        return primary;
      },
      primary: () => servers.primaryPort(),
    });
    console.log(describeFailover('sentinel', outcome));
    expect(outcome.controlsDied, outcome.controlOutput.join('\n')).toBe(outcome.controls);
    expect(outcome.crashes).toEqual([]);
    expect(outcome.results).toHaveLength(4);
    expect(Number.isFinite(outcome.promotedAt)).toBe(true);
    expect(outcome.calls).toBeGreaterThan(100);
    expect(outcome.expired).toBe(0);
    expect(outcome.foreign).toBe(0);
    expect(outcome.overDeadline).toBe(0);
    expect(outcome.failed).toBe(0);
    expect(outcome.neverBack).toBe(0);
    // Within a second on a quiet machine (the bench's figure); bounded generously for a loaded one.
    for (const ms of outcome.backAfterPromotionMs) expect(ms).toBeLessThan(4_000);
  });
});
