// Entries never outlive their token: the key expires at the token's own expiry (an absolute time set
// in the write script), however long the write waited, and a read drops an entry past its expiry
// whatever the key's TTL says. Real redis-server, slowed with SIGSTOP.
import { randomBytes } from 'node:crypto';
import type { StoredToken } from '@partner-lending/auth';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisTokenStore, DEFAULT_NAMESPACE } from '../src/index.js';
import { redisNames } from '../src/redis-keys.js';
import { sleep } from './support/loop-fleet.js';
import { type RedisServer, startRedis } from './support/redis-server.mjs';
import { startTokenServer, type TokenServer } from './support/token-server.mjs';

const encryptionKey = randomBytes(32).toString('base64');
let redis: RedisServer;
let server: TokenServer;
let raw: ReturnType<typeof createClient>;

beforeAll(async () => {
  redis = await startRedis();
  server = await startTokenServer();
  raw = createClient({ url: redis.url });
  raw.on('error', () => {});
  await raw.connect();
}, 30_000);

afterAll(async () => {
  redis?.resume();
  await raw?.close().catch(() => {});
  await server?.close();
  await redis?.stop();
});

/** A token (the token server's) that expires `ms` from now. */
const expiringIn = (ms: number): StoredToken => ({
  ...server.foreignToken(),
  obtainedAt: Date.now(),
  expiresAt: Date.now() + ms,
});

describe('entries never outlive their token', () => {
  it('a write held up by a hung server (SIGSTOP) leaves no key alive past the token: get returns nothing once it expired', async () => {
    const store = createRedisTokenStore({ url: redis.url, encryptionKey, commandTimeoutMs: 5_000 });
    try {
      await store.get('warm-up');
      const key = 'slow-write';
      const token = expiringIn(700);
      redis.pause();
      // The TTL is handed over now; the server executes the write 500 ms later.
      const writing = store.set(key, token, token.expiresAt - Date.now());
      await sleep(500);
      redis.resume();
      await writing;
      const expireAt = Number(
        await raw.sendCommand(['PEXPIRETIME', redisNames(DEFAULT_NAMESPACE, key).token]),
      );
      expect(expireAt).toBeGreaterThan(0);
      expect(expireAt).toBeLessThanOrEqual(token.expiresAt);
      expect((await store.get(key))?.jti).toBe(token.jti);
      await sleep(token.expiresAt - Date.now() + 30);
      expect(await store.get(key)).toBeUndefined();
    } finally {
      redis.resume();
      await store.close();
    }
  });

  it('negative control: the same held-up write with a relative TTL (PX, what the store did before) leaves the key alive past the token', async () => {
    const name = 'control:slow-write';
    const expiresAt = Date.now() + 700;
    redis.pause();
    const writing = raw.sendCommand(['SET', name, 'x', 'PX', String(expiresAt - Date.now())]);
    await sleep(500);
    redis.resume();
    await writing;
    await sleep(expiresAt - Date.now() + 30);
    // Past the "token's" expiry, the key still has about the 500 ms the write waited.
    expect(Number(await raw.sendCommand(['PTTL', name]))).toBeGreaterThan(200);
    await raw.sendCommand(['DEL', name]);
  });

  it('a read drops an entry past its expiry even when the key lives on (another clock, a key extended by hand)', async () => {
    const store = createRedisTokenStore({ url: redis.url, encryptionKey });
    try {
      const key = 'long-key';
      const token = expiringIn(400);
      await store.set(key, token, 400);
      await raw.sendCommand(['PEXPIRE', redisNames(DEFAULT_NAMESPACE, key).token, '60000']);
      // Control: alive, it is read back.
      expect((await store.get(key))?.jti).toBe(token.jti);
      await sleep(token.expiresAt - Date.now() + 30);
      expect(Number(await raw.sendCommand(['EXISTS', redisNames(DEFAULT_NAMESPACE, key).token]))).toBe(1);
      expect(await store.get(key)).toBeUndefined();
    } finally {
      await store.close();
    }
  });
});
