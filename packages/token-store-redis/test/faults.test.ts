// The store and the provider under the faults production fleets meet: a Redis that hangs (SIGSTOP)
// rather than dies, lock holders killed mid-request, a throttling token endpoint, planted entries, a
// wrong password. Real redis-server, real `node` worker processes, the project's real mock. The
// workers load the built packages (dist/): build first.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createTokenProvider, type StoredToken, type TokenEvent } from '@partner-lending/auth';
import { startMock } from '@partner-lending/mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisTokenStore, type RedisTokenStoreEvent } from '../src/index.js';
import { type LoopResult, type LoopWorker, sleep, startLoopWorker } from './support/loop-fleet.js';
import { providerCacheKey } from './support/provider-key.js';
import { type RedisServer, startRedis } from './support/redis-server.mjs';
import { CLIENT_ID, CLIENT_SECRET, startTokenServer, type TokenServer } from './support/token-server.mjs';

const encryptionKey = randomBytes(32).toString('base64');
let redis: RedisServer;
let server: TokenServer;

beforeAll(async () => {
  for (const dir of ['../dist/index.js', '../../auth/dist/index.js']) {
    if (!existsSync(fileURLToPath(new URL(dir, import.meta.url)))) {
      throw new Error(`${dir} is missing: run \`pnpm build\` at the repository root before this test.`);
    }
  }
  redis = await startRedis();
  server = await startTokenServer();
}, 30_000);

afterAll(async () => {
  await server?.close();
  await redis?.stop();
});

const sum = (results: LoopResult[], pick: (r: LoopResult) => number) =>
  results.reduce((total, r) => total + pick(r), 0);

describe('a hung Redis (SIGSTOP)', () => {
  it('one store: a command written to a hung server rejects within commandTimeoutMs, Redis is skipped, then probed back', async () => {
    const events: RedisTokenStoreEvent[] = [];
    const store = createRedisTokenStore({
      url: redis.url,
      encryptionKey,
      commandTimeoutMs: 300,
      skipMs: 400,
      onEvent: (e) => events.push(e),
    });
    try {
      const planted = server.foreignToken();
      await store.set('k', planted, 60_000);
      redis.pause();
      const t0 = performance.now();
      const first = await store.get('k').catch((e: unknown) => e);
      const firstMs = performance.now() - t0;
      expect(first).toMatchObject({ code: 'ERR_REDIS_UNAVAILABLE' });
      // Without a deadline of the store's own this call would wait for as long as Redis hangs.
      expect(firstMs).toBeLessThan(2_000);
      expect(events.some((e) => e.type === 'redis-skipped')).toBe(true);
      // Skipped: the next call does not pay the timeout again.
      const t1 = performance.now();
      await expect(store.get('k')).rejects.toMatchObject({ code: 'ERR_REDIS_UNAVAILABLE' });
      expect(performance.now() - t1).toBeLessThan(300);
      await sleep(1_500);
      redis.resume();
      // A probe (one PING) finds it answering again.
      for (let i = 0; i < 50 && !(await store.get('k').then(Boolean, () => false)); i++) await sleep(100);
      expect((await store.get('k'))?.jti).toBe(planted.jti);
      expect(events.filter((e) => e.type === 'redis-ready').length).toBeGreaterThan(0);
    } finally {
      redis.resume();
      await store.close();
    }
  });

  it('close() on a hung Redis returns (bounded like every command)', async () => {
    const store = createRedisTokenStore({ url: redis.url, encryptionKey, commandTimeoutMs: 300 });
    await store.get('warm');
    redis.pause();
    try {
      const t0 = performance.now();
      await store.close();
      expect(performance.now() - t0).toBeLessThan(2_000);
    } finally {
      redis.resume();
    }
  });

  it('4 processes, 2-s tokens from the mock, Redis hung for 8 s: no getToken waits 4 s, none fails or is expired; the fleet shares again after SIGCONT', {
    timeout: 90_000,
  }, async () => {
    const mock = await startMock({ tokenTtlSeconds: 2 });
    const client = mock.clients[0]!;
    const DURATION = 22_000;
    try {
      const workers: LoopWorker[] = await Promise.all(
        Array.from({ length: 4 }, () =>
          startLoopWorker({
            redisUrl: redis.url,
            tokenUrl: mock.tokenUrl,
            audience: mock.audience,
            clientId: client.clientId,
            clientSecret: client.clientSecret,
            encryptionKey,
            durationMs: DURATION,
            intervalMs: 10,
          }),
        ),
      );
      const started = Date.now();
      for (const w of workers) w.go();
      await sleep(4_000);
      const sharedBefore = mock
        .requestLog()
        .filter((r) => r.server === 'auth' && r.at >= started + 1_000).length;
      redis.pause();
      const pausedAt = Date.now();
      await sleep(8_000);
      redis.resume();
      const resumedAt = Date.now();
      const results = await Promise.all(workers.map((w) => w.result()));
      const auth = mock.requestLog().filter((r) => r.server === 'auth');
      const during = auth.filter((r) => r.at >= pausedAt && r.at < resumedAt).length;
      // Every store skips Redis for at most 4 × skipMs and probes it: by 6 s after SIGCONT all share.
      const tailFrom = resumedAt + 6_000;
      const tailMs = started + DURATION - tailFrom;
      const tail = auth.filter((r) => r.at >= tailFrom && r.at < started + DURATION).length;
      const expiresIn = 1; // the mock's deployed profile: expires_in = tokenTtlSeconds - 1
      console.log(
        `SIGSTOP fleet: ${sum(results, (r) => r.calls)} calls, max wait ${Math.max(...results.map((r) => r.maxWaitMs))} ms, token requests: ${sharedBefore} in the 3 s before, ${during} during the 8-s hang, ${tail} in the last ${tailMs} ms`,
      );
      for (const r of results) {
        expect(r.failed, JSON.stringify(r.errors)).toBe(0);
        expect(r.maxWaitMs).toBeLessThan(4_000);
        expect(r.expired).toBe(0);
        expect(r.expiredByExp).toBe(0);
        // The hang was met, not missed: each process skipped Redis and fell back on its own.
        expect(r.storeEvents['redis-skipped'] ?? 0).toBeGreaterThan(0);
        expect(r.providerEvents['store-failed'] ?? 0).toBeGreaterThan(0);
      }
      expect(sum(results, (r) => r.calls)).toBeGreaterThan(1_000);
      // Shared before and after: about one request per lifetime for the fleet (alone, 4 per lifetime).
      const perLifetime = (n: number, ms: number) => n / (ms / (expiresIn * 1000));
      expect(perLifetime(sharedBefore, 3_000)).toBeLessThanOrEqual(1.6);
      expect(perLifetime(tail, tailMs)).toBeLessThanOrEqual(1.6);
      // During the hang each process asked for itself: more than the fleet shared.
      expect(perLifetime(during, resumedAt - pausedAt)).toBeGreaterThan(2);
    } finally {
      redis.resume();
      await mock.close();
    }
  });
});

describe('lock holders killed while 2-s tokens renew', () => {
  it('no process is ever handed an expired token', { timeout: 90_000 }, async () => {
    const local = await startTokenServer({ ttlSeconds: 2, delayMs: 250 });
    const job = {
      redisUrl: redis.url,
      tokenUrl: local.tokenUrl,
      audience: local.audience,
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      encryptionKey,
      intervalMs: 10,
    };
    try {
      const survivors = await Promise.all(
        Array.from({ length: 3 }, () => startLoopWorker({ ...job, durationMs: 14_000 })),
      );
      for (const w of survivors) w.go();
      const started = Date.now();
      let killed = 0;
      // Victims join the fleet and are killed at random moments, often while holding the lock.
      while (Date.now() - started < 12_000) {
        const victim = await startLoopWorker({ ...job, durationMs: 60_000 });
        victim.go();
        await sleep(200 + Math.floor(Math.random() * 1_200));
        victim.child.kill('SIGKILL');
        victim.result().catch(() => {});
        killed++;
      }
      const results = await Promise.all(survivors.map((w) => w.result()));
      console.log(
        `killed lock holders: ${killed} victims, ${sum(results, (r) => r.calls)} calls by the survivors, ${local.tokenRequests()} token requests`,
      );
      expect(killed).toBeGreaterThan(5);
      expect(sum(results, (r) => r.calls)).toBeGreaterThan(1_000);
      for (const r of results) {
        expect(r.failed, JSON.stringify(r.errors)).toBe(0);
        expect(r.expired).toBe(0);
        expect(r.expiredByExp).toBe(0);
      }
    } finally {
      await local.close();
    }
  });
});

describe('a throttling token endpoint (429, Retry-After: 30)', () => {
  it('a fleet of 4 × callers with 5-s deadlines makes 1 token request; every call fails fast with TokenThrottledError', {
    timeout: 60_000,
  }, async () => {
    const local = await startTokenServer();
    local.setRetryAfter(30);
    try {
      const workers = await Promise.all(
        Array.from({ length: 4 }, () =>
          startLoopWorker({
            redisUrl: redis.url,
            tokenUrl: local.tokenUrl,
            audience: local.audience,
            clientId: CLIENT_ID,
            clientSecret: CLIENT_SECRET,
            encryptionKey,
            durationMs: 4_000,
            intervalMs: 20,
            timeoutMs: 5_000,
          }),
        ),
      );
      for (const w of workers) w.go();
      const results = await Promise.all(workers.map((w) => w.result()));
      expect(local.tokenRequests()).toBe(1);
      for (const r of results) {
        expect(r.calls).toBeGreaterThan(10);
        expect(r.errors).toEqual({ ERR_TOKEN_THROTTLED: r.calls });
        // Nobody waited for the 30 s, nor up to its deadline.
        expect(r.maxWaitMs).toBeLessThan(5_000);
      }
      // A process that starts later learns it from Redis too, without a request.
      const late = await startLoopWorker({
        redisUrl: redis.url,
        tokenUrl: local.tokenUrl,
        audience: local.audience,
        clientId: CLIENT_ID,
        clientSecret: CLIENT_SECRET,
        encryptionKey,
        durationMs: 500,
        timeoutMs: 5_000,
      });
      late.go();
      const lateResult = await late.result();
      expect(lateResult.errors.ERR_TOKEN_THROTTLED).toBe(lateResult.calls);
      expect(local.tokenRequests()).toBe(1);
    } finally {
      await local.close();
    }
  });
});

describe('planted entries', () => {
  for (const keyed of [false, true]) {
    it(`${keyed ? 'keyed' : 'unkeyed'} store: tokens planted for another audience, client or partner are served to 0 calls`, async () => {
      const key = await providerCacheKey(server);
      const planter = createRedisTokenStore({
        url: redis.url,
        encryptionKey: keyed ? encryptionKey : (undefined as never),
      });
      const plants: [string, StoredToken][] = [
        ['audience', server.foreignToken({ audience: 'https://another-api.example' })],
        ['client', server.foreignToken({ clientId: 'another-client', partnerId: 'partner-other' })],
        ['partner', { ...server.foreignToken(), partnerId: 'partner-other' }],
      ];
      try {
        for (const [reason, plant] of plants) {
          await planter.set(key, plant, 60_000);
          const events: TokenEvent[] = [];
          const store = createRedisTokenStore({
            url: redis.url,
            encryptionKey: keyed ? encryptionKey : (undefined as never),
          });
          const provider = createTokenProvider({
            tokenUrl: server.tokenUrl,
            clientId: CLIENT_ID,
            clientSecret: CLIENT_SECRET,
            audience: server.audience,
            store,
            onEvent: (e) => events.push(e),
          });
          let servedPlant = 0;
          for (let i = 0; i < 200; i++) {
            if ((await provider.getToken()).accessToken === plant.accessToken) servedPlant++;
          }
          expect(servedPlant, reason).toBe(0);
          expect(
            events
              .filter((e) => e.type === 'store-entry-rejected')
              .map((e) => (e as { reason: string }).reason),
          ).toEqual([reason]);
          await provider.invalidate();
          await store.close();
        }
      } finally {
        await planter.close();
      }
    });
  }
});

describe('a wrong Redis password', () => {
  it('is ERR_REDIS_AUTH with its own event, and the store backs off instead of hammering', {
    timeout: 30_000,
  }, async () => {
    const guarded = await startRedis({ password: 'the-right-one' });
    const events: RedisTokenStoreEvent[] = [];
    const wrong = createRedisTokenStore({
      url: guarded.url.replace('redis://', 'redis://:not-the-password@'),
      encryptionKey,
      onEvent: (e) => events.push(e),
    });
    const right = createRedisTokenStore({
      url: guarded.url.replace('redis://', 'redis://:the-right-one@'),
      encryptionKey,
    });
    try {
      const error = await wrong.get('k').catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'ERR_REDIS_AUTH' });
      expect(String((error as Error).message)).not.toContain('not-the-password');
      await sleep(6_000);
      const attempts = events.filter((e) => e.type === 'redis-reconnecting').length;
      console.log(`wrong password: ${attempts} connection attempts in 6 s`);
      // 1 s, 2 s, 4 s… (halved at random): a handful, not one every 100 ms.
      expect(attempts).toBeGreaterThan(0);
      expect(attempts).toBeLessThanOrEqual(6);
      expect(events.filter((e) => e.type === 'redis-auth-failed')).toHaveLength(1);
      // Control: the right password works against the same server.
      await right.set('k', server.foreignToken(), 10_000);
      expect(await right.get('k')).toBeDefined();
    } finally {
      await wrong.close();
      await right.close();
      await guarded.stop();
    }
  });
});
