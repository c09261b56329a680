// The store through a node-redis Sentinel client (createSentinel): a real primary, replica and
// sentinel started by the test, including a failover of the primary.
import { randomBytes } from 'node:crypto';
import { createTokenProvider, type TokenStore } from '@partner-lending/auth';
import { createSentinel } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisTokenStore, type RedisTokenStoreEvent } from '../src/index.js';
import { sleep } from './support/loop-fleet.js';
import { providerCacheKey } from './support/provider-key.js';
import { PRIMARY_NAME, type SentinelServers, startSentinel } from './support/redis-sentinel.mjs';
import { CLIENT_ID, CLIENT_SECRET, startTokenServer, type TokenServer } from './support/token-server.mjs';

const encryptionKey = randomBytes(32).toString('base64');
let servers: SentinelServers;
let tokens: TokenServer;
const clients: { close(): Promise<unknown>; destroy(): void; readonly isOpen: boolean }[] = [];

beforeAll(async () => {
  servers = await startSentinel();
  tokens = await startTokenServer({ delayMs: 150 });
}, 60_000);

afterAll(async () => {
  for (const c of clients) {
    await Promise.race([c.close().catch(() => {}), sleep(2_000)]);
    if (c.isOpen) c.destroy();
  }
  await tokens?.close();
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

describe('Redis Sentinel (a primary, a replica, a sentinel)', { timeout: 90_000 }, () => {
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
  });
});
