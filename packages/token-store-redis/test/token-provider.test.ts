// End to end with the auth package's provider: createTokenProvider({ store }) against a real
// redis-server and a counting token endpoint. Each provider has its own store (its own connections),
// as each process of a fleet would.
import { randomBytes } from 'node:crypto';
import { createTokenProvider, type TokenEvent } from '@partner-lending/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisTokenStore, type RedisTokenStore, type RedisTokenStoreEvent } from '../src/index.js';
import { type RedisServer, startRedis } from './support/redis-server.mjs';
import { CLIENT_ID, CLIENT_SECRET, startTokenServer, type TokenServer } from './support/token-server.mjs';

const encryptionKey = randomBytes(32).toString('base64');
let redis: RedisServer;
let server: TokenServer;
const stores: RedisTokenStore[] = [];

beforeAll(async () => {
  redis = await startRedis();
  server = await startTokenServer({ delayMs: 50 });
}, 30_000);

afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await server?.close();
  await redis?.stop();
});

function member() {
  const storeEvents: RedisTokenStoreEvent[] = [];
  const providerEvents: TokenEvent[] = [];
  const store = createRedisTokenStore({
    url: redis.url,
    encryptionKey,
    maxReconnectDelayMs: 200,
    onEvent: (e) => storeEvents.push(e),
  });
  stores.push(store);
  const provider = createTokenProvider({
    tokenUrl: server.tokenUrl,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    audience: server.audience,
    requestTimeoutMs: 2_000,
    store,
    onEvent: (e) => providerEvents.push(e),
  });
  return { store, provider, storeEvents, providerEvents };
}

const all = <T>(n: number, f: () => Promise<T>) => Promise.all(Array.from({ length: n }, f));

describe('createTokenProvider({ store: createRedisTokenStore(…) })', { timeout: 30_000 }, () => {
  it('shares one token between providers, keeps serving while Redis is down, and shares again once it is back', async () => {
    const a = member();
    const b = member();
    const start = server.tokenRequests();
    const first = await all(50, () => a.provider.getToken());
    const second = await all(50, () => b.provider.getToken());
    expect(server.tokenRequests() - start).toBe(1);
    expect(new Set([...first, ...second].map((t) => t.accessToken)).size).toBe(1);

    // Redis goes away.
    const cold = member();
    await cold.store.get('warm-up').catch(() => {});
    await redis.kill();
    const beforeDown = server.tokenRequests();
    // A provider that has the token serves it from its own memory: no request.
    const served = await all(50, () => a.provider.getToken());
    expect(served.every((t) => t.accessToken === first[0]?.accessToken)).toBe(true);
    expect(server.tokenRequests()).toBe(beforeDown);
    // A cold provider asks the endpoint itself, once for its 50 callers (no storm), and no call fails.
    const own = await all(50, () => cold.provider.getToken());
    expect(new Set(own.map((t) => t.accessToken)).size).toBe(1);
    expect(server.tokenRequests() - beforeDown).toBe(1);
    expect(cold.providerEvents.some((e) => e.type === 'store-failed')).toBe(true);
    expect(cold.storeEvents.some((e) => e.type === 'redis-down')).toBe(true);
    expect(cold.storeEvents.filter((e) => e.type === 'redis-error').length).toBeGreaterThan(0);

    // Redis is back (empty): the stores reconnect by themselves and the fleet shares again.
    await redis.restart();
    for (let i = 0; i < 100 && !(a.store.isReady && cold.store.isReady); i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(cold.storeEvents.filter((e) => e.type === 'redis-ready').length).toBeGreaterThanOrEqual(2);
    const afterRestart = server.tokenRequests();
    const d = member();
    const e = member();
    const dTokens = await all(20, () => d.provider.getToken());
    const eTokens = await all(20, () => e.provider.getToken());
    expect(server.tokenRequests() - afterRestart).toBe(1);
    expect(new Set([...dTokens, ...eTokens].map((t) => t.accessToken)).size).toBe(1);
    // No event or error text of either side carries a whole token or the key.
    const text = JSON.stringify([a, b, cold, d, e].map((m) => [m.storeEvents, m.providerEvents]));
    for (const t of [...server.issued]) expect(text).not.toContain(t);
    expect(text).not.toContain(encryptionKey);
  });

  it('after an invalidation, two providers asking again together cost one token request', async () => {
    server.setTtlSeconds(3);
    try {
      const a = member();
      const b = member();
      const t0 = await a.provider.getToken({ scopes: ['read:loans', 'create:loan_draft'] });
      const t1 = await b.provider.getToken({ scopes: ['read:loans', 'create:loan_draft'] });
      expect(t1.accessToken).toBe(t0.accessToken);
      const before = server.tokenRequests();
      // Both providers invalidate the token (say the API refused it) and ask again together.
      await a.provider.invalidate(t0);
      await b.provider.invalidate(t0);
      const [na, nb] = await Promise.all([
        a.provider.getToken({ scopes: ['read:loans', 'create:loan_draft'] }),
        b.provider.getToken({ scopes: ['read:loans', 'create:loan_draft'] }),
      ]);
      expect(na.accessToken).not.toBe(t0.accessToken);
      expect(nb.accessToken).toBe(na.accessToken);
      expect(server.tokenRequests() - before).toBe(1);
    } finally {
      server.setTtlSeconds(3600);
    }
  });
});
