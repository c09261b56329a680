// The store against a real redis-server (started here on a free loopback port, stopped after).
import { randomBytes } from 'node:crypto';
import type { StoredToken } from '@partner-lending/auth';
import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createRedisTokenStore,
  type RedisClient,
  type RedisTokenStore,
  RedisTokenStoreError,
  type RedisTokenStoreEvent,
  type RedisTokenStoreSettings,
} from '../src/index.js';
import { redisNames } from '../src/redis-keys.js';
import { type RedisServer, startRedis } from './support/redis-server.mjs';

const KEY_A = randomBytes(32).toString('base64');
const KEY_B = randomBytes(32).toString('hex');
const NS = 'partner-lending:token-store:';

let redis: RedisServer;
let raw: RedisClient;
const stores: RedisTokenStore[] = [];
let seq = 0;

function token(overrides: Partial<StoredToken> = {}): StoredToken {
  const now = Date.now();
  seq++;
  return {
    accessToken: `eyJhbGciOiJFUzI1NiJ9.${randomBytes(24).toString('base64url')}.sig${seq}`,
    tokenType: 'Bearer',
    expiresAt: now + 60_000,
    obtainedAt: now,
    grantedScopes: ['read:loans'],
    partnerId: 'partner-1',
    issuer: 'https://auth.test/',
    jti: `jti-${seq}`,
    ...overrides,
  };
}

/** A provider-style cache key, unique per test so that tests do not see each other's entries. */
const cacheKey = () => `partner-lending-auth:v1|https://auth.test/oauth/token|abc|https://api.test|${seq++}`;

function open(options: Partial<RedisTokenStoreSettings> = {}) {
  const events: RedisTokenStoreEvent[] = [];
  const store = createRedisTokenStore({
    url: redis.url,
    encryptionKey: KEY_A,
    ...options,
    onEvent: (event) => events.push(event),
  });
  stores.push(store);
  return { store, events };
}

beforeAll(async () => {
  redis = await startRedis();
  raw = createClient({ url: redis.url }) as RedisClient;
  raw.on('error', () => {});
  await raw.connect();
}, 30_000);

afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

afterAll(async () => {
  await raw?.close().catch(() => {});
  await redis?.stop();
});

describe('get / set / delete', () => {
  it('round-trips a token, encrypted at rest: Redis holds neither the token nor a part of it', async () => {
    const { store } = open();
    const key = cacheKey();
    const t = token();
    await store.set(key, t, t.expiresAt - Date.now());
    expect(await store.get(key)).toEqual(t);
    const names = redisNames(NS, key);
    const stored = (await raw.hGetAll(names.token)) as Record<string, string>;
    expect(Object.keys(stored).sort()).toEqual(['e', 'k', 'o', 'v']);
    const [, payload, signature] = t.accessToken.split('.');
    const everything = JSON.stringify(stored);
    for (const part of [t.accessToken, payload as string, signature as string, t.jti]) {
      expect(everything).not.toContain(part);
    }
    expect(stored.k).toMatch(/^[0-9a-f]{16}$/);
    expect(Buffer.from(stored.v as string, 'base64').toString('latin1')).not.toContain('accessToken');
  });

  it('gives a miss for a key never written, and after delete', async () => {
    const { store } = open();
    const key = cacheKey();
    expect(await store.get(key)).toBeUndefined();
    const t = token();
    await store.set(key, t, 60_000);
    expect(await store.get(key)).toEqual(t);
    await store.delete(key);
    expect(await store.get(key)).toBeUndefined();
  });

  it("sets the Redis TTL to the token's remaining validity, so no expired token is ever served", async () => {
    const { store } = open();
    const key = cacheKey();
    const t = token({ expiresAt: Date.now() + 45_000 });
    const ttl = t.expiresAt - Date.now();
    await store.set(key, t, ttl);
    const pttl = await raw.pTTL(redisNames(NS, key).token);
    expect(pttl).toBeLessThanOrEqual(ttl);
    expect(pttl).toBeGreaterThan(ttl - 1_000);
    // A token with 300 ms left is gone from Redis once they have passed.
    const shortKey = cacheKey();
    const short = token({ expiresAt: Date.now() + 300 });
    await store.set(shortKey, short, 300);
    expect(await store.get(shortKey)).toEqual(short);
    await new Promise((r) => setTimeout(r, 400));
    expect(await store.get(shortKey)).toBeUndefined();
    expect(await raw.exists(redisNames(NS, shortKey).token)).toBe(0);
  });

  it('the holder of a single flight stores its token with TTL = expiresAt - now', async () => {
    const { store } = open();
    const key = cacheKey();
    const t = token({ expiresAt: Date.now() + 30_000 });
    await store.singleFlight(key, async () => t, { timeoutMs: 5_000 });
    const pttl = await raw.pTTL(redisNames(NS, key).token);
    const left = t.expiresAt - Date.now();
    expect(pttl).toBeLessThanOrEqual(left + 5);
    expect(pttl).toBeGreaterThan(left - 1_000);
  });

  it('does not store a token whose validity has already ended', async () => {
    const { store } = open();
    const key = cacheKey();
    await store.set(key, token({ expiresAt: Date.now() - 1 }), 0);
    expect(await raw.exists(redisNames(NS, key).token)).toBe(0);
  });
});

describe('keys', () => {
  it('are namespaced and hash-tagged: token and lock share the tag; no URL, audience or scope in the name', async () => {
    const { store } = open({ namespace: 'acme:tokens:' });
    const key = `partner-lending-auth:v1|https://auth.example/oauth/token|abc|https://api.example|read:loans`;
    await store.singleFlight(key, async () => token(), { timeoutMs: 5_000 });
    const names = await raw.keys('acme:tokens:*');
    expect(names).toHaveLength(1);
    const [name] = names;
    expect(name).toMatch(/^acme:tokens:\{[0-9a-f]{32}\}:token$/);
    expect(name).not.toContain('example');
    expect(name).not.toContain('read:loans');
    const { token: tokenKey, lock } = redisNames('acme:tokens:', key);
    expect(name).toBe(tokenKey);
    expect(lock).toBe(tokenKey.replace(/:token$/, ':lock'));
  });

  it('rejects a namespace with { or }: it would break the hash tag', () => {
    expect(() => createRedisTokenStore({ url: redis.url, namespace: 'a{b}:' })).toThrow(/hash tag/);
  });

  describe('in Redis Cluster mode (every slot on one node)', () => {
    let cluster: RedisServer;
    let admin: RedisClient;
    beforeAll(async () => {
      cluster = await startRedis({ cluster: true });
      admin = createClient({ url: cluster.url }) as RedisClient;
      admin.on('error', () => {});
      await admin.connect();
      await admin.sendCommand(['CLUSTER', 'ADDSLOTSRANGE', '0', '16383']);
      for (let i = 0; i < 100; i++) {
        if (String(await admin.sendCommand(['CLUSTER', 'INFO'])).includes('cluster_state:ok')) break;
        await new Promise((r) => setTimeout(r, 100));
      }
    }, 30_000);
    afterAll(async () => {
      await admin?.close().catch(() => {});
      await cluster?.stop();
    });

    it('a script over two keys of different slots fails with CROSSSLOT here (the control)', async () => {
      await expect(
        admin.sendCommand([
          'EVAL',
          "redis.call('GET', KEYS[1]); return redis.call('GET', KEYS[2])",
          '2',
          'a',
          'b',
        ]),
      ).rejects.toThrow(/CROSSSLOT/);
    });

    it('token and lock map to one slot, and every script of the store runs', async () => {
      const events: RedisTokenStoreEvent[] = [];
      const store = createRedisTokenStore({
        url: cluster.url,
        encryptionKey: KEY_A,
        onEvent: (e) => events.push(e),
      });
      stores.push(store);
      const key = cacheKey();
      const names = redisNames(NS, key);
      const slot = (k: string) => admin.sendCommand(['CLUSTER', 'KEYSLOT', k]);
      expect(await slot(names.token)).toBe(await slot(names.lock));
      const t = await store.singleFlight(key, async () => token(), { timeoutMs: 5_000 });
      expect(await store.get(key)).toEqual(t);
      const newer = token({ expiresAt: t.expiresAt + 1_000 });
      await store.set(key, newer, 60_000);
      expect(await store.get(key)).toEqual(newer);
      expect(events.filter((e) => e.type === 'redis-error')).toEqual([]);
    });
  });
});

describe('encryption', () => {
  it('treats a modified ciphertext as a miss, reports it, and deletes the damaged entry', async () => {
    const { store, events } = open();
    const key = cacheKey();
    await store.set(key, token(), 60_000);
    const names = redisNames(NS, key);
    const v = Buffer.from((await raw.hGet(names.token, 'v')) as string, 'base64');
    v[20] = (v[20] as number) ^ 1;
    await raw.hSet(names.token, 'v', v.toString('base64'));
    expect(await store.get(key)).toBeUndefined();
    expect(events).toContainEqual({ type: 'token-unreadable', tag: names.tag, reason: 'tampered' });
    expect(await raw.exists(names.token)).toBe(0);
  });

  it('detects an edited expiry beside the ciphertext, and a ciphertext moved to another key', async () => {
    const { store, events } = open();
    const key = cacheKey();
    const other = cacheKey();
    await store.set(key, token(), 60_000);
    const names = redisNames(NS, key);
    const copy = (await raw.hGetAll(names.token)) as Record<string, string>;
    await raw.hSet(names.token, 'e', String(Number(copy.e) + 3_600_000));
    expect(await store.get(key)).toBeUndefined();
    await raw.hSet(redisNames(NS, other).token, copy);
    expect(await store.get(other)).toBeUndefined();
    expect(events.filter((e) => e.type === 'token-unreadable').map((e) => 'reason' in e && e.reason)).toEqual(
      ['tampered', 'tampered'],
    );
  });

  it('a store with another key gets a miss (wrong-key, entry kept), and its own write replaces the entry', async () => {
    const a = open();
    const b = open({ encryptionKey: KEY_B });
    const key = cacheKey();
    const t = token();
    await a.store.set(key, t, 60_000);
    expect(await b.store.get(key)).toBeUndefined();
    expect(b.events).toContainEqual({
      type: 'token-unreadable',
      tag: redisNames(NS, key).tag,
      reason: 'wrong-key',
    });
    expect(await a.store.get(key)).toEqual(t);
    const mine = token({ expiresAt: t.expiresAt - 10_000 });
    await b.store.set(key, mine, 50_000);
    expect(await b.store.get(key)).toEqual(mine);
  });

  it('rotates keys: the first key encrypts, every listed key decrypts', async () => {
    const old = open({ encryptionKey: KEY_B });
    const key = cacheKey();
    const t = token();
    await old.store.set(key, t, 60_000);
    const rotated = open({ encryptionKey: [KEY_A, KEY_B] });
    expect(await rotated.store.get(key)).toEqual(t);
    const next = token({ expiresAt: t.expiresAt + 1 });
    await rotated.store.set(key, next, 60_000);
    expect(await open({ encryptionKey: KEY_A }).store.get(key)).toEqual(next);
  });

  it('reads the key from PARTNER_TOKEN_STORE_KEY when no option is given', async () => {
    const key = cacheKey();
    const t = token();
    await open({ encryptionKey: KEY_B }).store.set(key, t, 60_000);
    process.env.PARTNER_TOKEN_STORE_KEY = KEY_B;
    try {
      const store = createRedisTokenStore({ url: redis.url });
      stores.push(store);
      expect(await store.get(key)).toEqual(t);
    } finally {
      delete process.env.PARTNER_TOKEN_STORE_KEY;
    }
  });

  it('refuses a malformed key without printing it', () => {
    const secretish = 'my-password-is-not-a-key';
    let caught: unknown;
    try {
      createRedisTokenStore({ url: redis.url, encryptionKey: secretish });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(RedisTokenStoreError);
    expect((caught as RedisTokenStoreError).code).toBe('ERR_INVALID_ENCRYPTION_KEY');
    expect((caught as Error).message).toBe(
      'encryptionKey is not an AES-256 key (24 characters); expected 32 random bytes as 44 base64 characters or 64 hex characters: generate one with `openssl rand -base64 32`.',
    );
    expect(() => createRedisTokenStore({ url: redis.url, encryptionKey: randomBytes(16) })).toThrow(
      RedisTokenStoreError,
    );
    // 43 base64url characters and a Uint8Array of 32 bytes are keys.
    stores.push(
      createRedisTokenStore({ url: redis.url, encryptionKey: randomBytes(32).toString('base64url') }),
    );
    stores.push(createRedisTokenStore({ url: redis.url, encryptionKey: new Uint8Array(randomBytes(32)) }));
  });

  it('without a key: stores in clear, says so once per process, and a keyed store never trusts such an entry', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      const plain = open({ encryptionKey: undefined });
      const again = open({ encryptionKey: undefined });
      await new Promise((r) => setImmediate(r));
      const ours = warnings.filter(
        (w) => (w as { code?: string }).code === 'PARTNER_TOKEN_STORE_UNENCRYPTED',
      );
      expect(ours).toHaveLength(1);
      expect(ours[0]?.message).toMatch(/stored in Redis in clear/);
      expect(plain.events).toContainEqual({ type: 'encryption-disabled' });
      expect(again.events).toContainEqual({ type: 'encryption-disabled' });
      const key = cacheKey();
      const t = token();
      await plain.store.set(key, t, 60_000);
      expect(await plain.store.get(key)).toEqual(t);
      expect(await raw.hGet(redisNames(NS, key).token, 'k')).toBe('none');
      const keyed = open();
      expect(await keyed.store.get(key)).toBeUndefined();
      expect(keyed.events).toContainEqual({
        type: 'token-unreadable',
        tag: redisNames(NS, key).tag,
        reason: 'not-encrypted',
      });
      // And the keyless store cannot read an encrypted entry.
      const sealed = cacheKey();
      await keyed.store.set(sealed, token(), 60_000);
      expect(await plain.store.get(sealed)).toBeUndefined();
      expect(plain.events).toContainEqual({
        type: 'token-unreadable',
        tag: redisNames(NS, sealed).tag,
        reason: 'no-key',
      });
    } finally {
      process.off('warning', onWarning);
    }
  });
});

describe('out-of-order writes', () => {
  it('an older token written late does not replace a newer one (and a newer one does replace)', async () => {
    const { store, events } = open();
    const late = open().store; // another "process": its own connection
    const key = cacheKey();
    const older = token({ obtainedAt: Date.now() - 2_000, expiresAt: Date.now() + 58_000 });
    const newer = token();
    await store.set(key, newer, 60_000);
    await late.set(key, older, 58_000);
    expect(await store.get(key)).toEqual(newer);
    const pttl = await raw.pTTL(redisNames(NS, key).token);
    expect(pttl).toBeGreaterThan(58_000);
    const newest = token({ expiresAt: newer.expiresAt + 5_000 });
    await late.set(key, newest, 65_000);
    expect(await store.get(key)).toEqual(newest);
    expect(events.filter((e) => e.type === 'write-skipped')).toHaveLength(0);
  });

  it('on equal expiry the later request start wins', async () => {
    const { store, events } = open();
    const key = cacheKey();
    const expiresAt = Date.now() + 60_000;
    const first = token({ expiresAt, obtainedAt: Date.now() - 10 });
    const second = token({ expiresAt, obtainedAt: Date.now() });
    await store.set(key, second, 60_000);
    await store.set(key, first, 60_000);
    expect(await store.get(key)).toEqual(second);
    expect(events).toContainEqual({ type: 'write-skipped', tag: redisNames(NS, key).tag });
  });

  it('a lock holder that finishes late does not overwrite the newer token nor release the new holder’s lock', async () => {
    const a = open().store;
    const b = open().store;
    const key = cacheKey();
    const names = redisNames(NS, key);
    const stale = token({ obtainedAt: Date.now() - 1_000, expiresAt: Date.now() + 50_000 });
    let finishA!: () => void;
    const aDone = a.singleFlight(
      key,
      () => new Promise<StoredToken>((resolve) => (finishA = () => resolve(stale))),
      { timeoutMs: 200 },
    );
    await new Promise((r) => setTimeout(r, 300)); // A's lock has expired
    let finishB!: () => void;
    const fresh = token();
    const bDone = b.singleFlight(
      key,
      () => new Promise<StoredToken>((resolve) => (finishB = () => resolve(fresh))),
      { timeoutMs: 10_000 },
    );
    for (let i = 0; i < 250 && finishB === undefined; i++) await new Promise((r) => setTimeout(r, 20));
    expect(finishB).toBeTypeOf('function'); // B holds the lock now
    // B finishes first with the fresh token; then A, late, with the stale one.
    finishB();
    expect(await bDone).toEqual(fresh);
    finishA();
    expect(await aDone).toEqual(stale); // A's caller gets what A fetched...
    expect(await b.get(key)).toEqual(fresh); // ...but Redis keeps the newer token.
    expect(await raw.exists(names.lock)).toBe(0);
  });

  it('a live holder renews its lease: a request longer than lockLeaseMs keeps the lock', async () => {
    const a = open({ lockLeaseMs: 150 }).store;
    const b = open({ lockLeaseMs: 150 }).store;
    const key = cacheKey();
    const names = redisNames(NS, key);
    const slowToken = token();
    const aDone = a.singleFlight(
      key,
      () => new Promise<StoredToken>((resolve) => setTimeout(() => resolve(slowToken), 700)),
      { timeoutMs: 10_000 },
    );
    await new Promise((r) => setTimeout(r, 50));
    const leased = await raw.pTTL(names.lock);
    expect(leased).toBeGreaterThan(0);
    expect(leased).toBeLessThanOrEqual(150); // the lease, not the flight's 10 s
    let bFetched = 0;
    const bDone = b.singleFlight(
      key,
      async () => {
        bFetched++;
        return token();
      },
      { timeoutMs: 10_000 },
    );
    expect(await aDone).toEqual(slowToken);
    expect(await bDone).toEqual(slowToken); // B waited through several leases and took A's token
    expect(bFetched).toBe(0);
  });

  it('a lock that missed its holder’s renewal (the holder gone, or its lock carried over to a promoted replica) is taken over at once; a lock within its renewal window, or without a lease in its id, is waited for (the controls)', async () => {
    const { store, events } = open();
    const fetched: string[] = [];
    const fetch = (name: string) => async () => {
      fetched.push(name);
      return token();
    };
    // A 5-s lease renewed every 1.67 s: 2 s left means a renewal was missed by more than the grace.
    const orphaned = cacheKey();
    await raw.set(redisNames(NS, orphaned).lock, `${'d'.repeat(32)}.5000`, { PX: 2_000 });
    const t0 = Date.now();
    await store.singleFlight(orphaned, fetch('orphaned'), { timeoutMs: 10_000 });
    expect(Date.now() - t0).toBeLessThan(1_500);
    expect(fetched).toEqual(['orphaned']);
    expect(events).toContainEqual(expect.objectContaining({ type: 'lock-acquired', takeover: true }));
    // Controls: 4 s left of a 5-s lease (a live holder between renewals), and an id without a lease.
    const live = cacheKey();
    await raw.set(redisNames(NS, live).lock, `${'e'.repeat(32)}.5000`, { PX: 4_000 });
    await expect(store.singleFlight(live, fetch('live'), { timeoutMs: 600 })).rejects.toMatchObject({
      code: 'ERR_SINGLE_FLIGHT_TIMEOUT',
    });
    const unknown = cacheKey();
    await raw.set(redisNames(NS, unknown).lock, 'f'.repeat(32), { PX: 2_000 });
    await expect(store.singleFlight(unknown, fetch('unknown'), { timeoutMs: 600 })).rejects.toMatchObject({
      code: 'ERR_SINGLE_FLIGHT_TIMEOUT',
    });
    expect(fetched).toEqual(['orphaned']);
  });

  it('a holder whose lock expired leaves the new holder’s lock in place', async () => {
    const a = open().store;
    const b = open().store;
    const key = cacheKey();
    const names = redisNames(NS, key);
    let finishA!: () => void;
    const aDone = a.singleFlight(
      key,
      () => new Promise<StoredToken>((resolve) => (finishA = () => resolve(token()))),
      { timeoutMs: 150 },
    );
    await new Promise((r) => setTimeout(r, 250));
    let finishB!: () => void;
    const bDone = b.singleFlight(
      key,
      () =>
        new Promise<StoredToken>(
          (resolve) => (finishB = () => resolve(token({ expiresAt: Date.now() + 90_000 }))),
        ),
      { timeoutMs: 10_000 },
    );
    for (let i = 0; i < 250 && finishB === undefined; i++) await new Promise((r) => setTimeout(r, 20));
    finishA();
    await aDone;
    expect(await raw.exists(names.lock)).toBe(1); // A did not delete B's lock
    finishB();
    await bDone;
    expect(await raw.exists(names.lock)).toBe(0); // B released its own
  });
});

describe('single flight in one process and between stores', () => {
  it('concurrent callers of two stores (two connections each) share one fetch, and waiters are notified', async () => {
    const a = open();
    const b = open();
    const key = cacheKey();
    let fetches = 0;
    const fetchToken = async () => {
      fetches++;
      await new Promise((r) => setTimeout(r, 200));
      return token();
    };
    // The lock would hold 60 s: only a notice can wake the waiters before the test's 10-s limit.
    const results = await Promise.all([
      ...Array.from({ length: 20 }, () => a.store.singleFlight(key, fetchToken, { timeoutMs: 60_000 })),
      ...Array.from({ length: 20 }, () => b.store.singleFlight(key, fetchToken, { timeoutMs: 60_000 })),
    ]);
    expect(fetches).toBe(1);
    expect(new Set(results.map((r) => r.accessToken)).size).toBe(1);
    const waiter = a.events.some((e) => e.type === 'lock-waiting') ? a.events : b.events;
    expect(waiter.some((e) => e.type === 'lock-waiting')).toBe(true);
  }, 10_000);

  it('returns a stored token without fetching, unless it is the one being replaced', async () => {
    const { store } = open();
    const key = cacheKey();
    const current = token();
    await store.set(key, current, 60_000);
    let fetches = 0;
    const next = token({ expiresAt: current.expiresAt + 1_000 });
    const fetchToken = async () => {
      fetches++;
      return next;
    };
    expect(await store.singleFlight(key, fetchToken, { timeoutMs: 5_000 })).toEqual(current);
    expect(fetches).toBe(0);
    expect(
      await store.singleFlight(key, fetchToken, { timeoutMs: 5_000, replacing: current.accessToken }),
    ).toEqual(next);
    expect(fetches).toBe(1);
    expect(await store.get(key)).toEqual(next);
    // Another process replacing the same old token now finds the new one: no second fetch.
    const other = open().store;
    expect(
      await other.singleFlight(key, fetchToken, { timeoutMs: 5_000, replacing: current.accessToken }),
    ).toEqual(next);
    expect(fetches).toBe(1);
  });

  it('a refresh does not take a stored token past half its lifetime: it may be older than the one replaced', async () => {
    const { store } = open();
    const key = cacheKey();
    const now = Date.now();
    const aging = token({ obtainedAt: now - 50_000, expiresAt: now + 10_000 });
    await store.set(key, aging, 10_000);
    const mine = 'a token this process got by itself while Redis was down';
    const next = token();
    let fetches = 0;
    const fetchToken = async () => {
      fetches++;
      return next;
    };
    // A miss takes any valid token...
    expect(await store.singleFlight(key, fetchToken, { timeoutMs: 5_000 })).toEqual(aging);
    expect(fetches).toBe(0);
    // ...a refresh of another token does not take this aging one, but a young one.
    expect(await store.singleFlight(key, fetchToken, { timeoutMs: 5_000, replacing: mine })).toEqual(next);
    expect(fetches).toBe(1);
    expect(await store.singleFlight(key, fetchToken, { timeoutMs: 5_000, replacing: mine })).toEqual(next);
    expect(fetches).toBe(1);
  });

  it("propagates the holder's error to its caller as is, and to waiting processes as ERR_REMOTE_FETCH_FAILED", async () => {
    const a = open().store;
    const b = open().store;
    const key = cacheKey();
    const failure = Object.assign(new Error('invalid_client'), { code: 'ERR_TOKEN_REQUEST' });
    let started!: () => void;
    const holding = new Promise<void>((r) => (started = r));
    const aDone = a.singleFlight(
      key,
      async () => {
        started();
        await new Promise((r) => setTimeout(r, 200));
        throw failure;
      },
      { timeoutMs: 60_000 },
    );
    await holding;
    const bDone = b.singleFlight(key, async () => token(), { timeoutMs: 60_000 });
    await expect(aDone).rejects.toBe(failure);
    const error = await bDone.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedisTokenStoreError);
    expect(error).toMatchObject({ code: 'ERR_REMOTE_FETCH_FAILED', remoteCode: 'ERR_TOKEN_REQUEST' });
    expect(await raw.exists(redisNames(NS, key).lock)).toBe(0);
  }, 10_000);

  it('a waiter gives up after timeoutMs with ERR_SINGLE_FLIGHT_TIMEOUT', async () => {
    const a = open().store;
    const b = open();
    const key = cacheKey();
    let release!: () => void;
    const aDone = a.singleFlight(key, () => new Promise<StoredToken>((r) => (release = () => r(token()))), {
      timeoutMs: 60_000,
    });
    for (let i = 0; i < 250 && release === undefined; i++) await new Promise((r) => setTimeout(r, 20));
    await expect(b.store.singleFlight(key, async () => token(), { timeoutMs: 300 })).rejects.toMatchObject({
      code: 'ERR_SINGLE_FLIGHT_TIMEOUT',
    });
    expect(b.events.some((e) => e.type === 'redis-error' && e.code === 'ERR_SINGLE_FLIGHT_TIMEOUT')).toBe(
      true,
    );
    release();
    await aDone;
  });

  it('honours the signal: an aborted wait rejects with its reason, the flight goes on for the others', async () => {
    const { store } = open();
    const key = cacheKey();
    const controller = new AbortController();
    let release!: () => void;
    const t = token();
    const fetchToken = () => new Promise<StoredToken>((r) => (release = () => r(t)));
    const aborted = store.singleFlight(key, fetchToken, { timeoutMs: 10_000, signal: controller.signal });
    const patient = store.singleFlight(key, fetchToken, { timeoutMs: 10_000 });
    for (let i = 0; i < 250 && release === undefined; i++) await new Promise((r) => setTimeout(r, 20));
    const reason = new Error('caller gave up');
    controller.abort(reason);
    await expect(aborted).rejects.toBe(reason);
    release();
    expect(await patient).toEqual(t);
    expect(await store.get(key)).toEqual(t);
    await expect(
      store.singleFlight(key, fetchToken, { timeoutMs: 10_000, signal: AbortSignal.abort(reason) }),
    ).rejects.toBe(reason);
  });
});

describe('Redis down and back', () => {
  it('rejects fast with ERR_REDIS_UNAVAILABLE while Redis is gone, reports it, and reconnects by itself', async () => {
    const down = await startRedis();
    try {
      const events: RedisTokenStoreEvent[] = [];
      const store = createRedisTokenStore({
        url: down.url,
        encryptionKey: KEY_A,
        maxReconnectDelayMs: 200,
        onEvent: (e) => events.push(e),
      });
      stores.push(store);
      const key = cacheKey();
      const t = await store.singleFlight(key, async () => token(), { timeoutMs: 5_000 });
      expect(await store.get(key)).toEqual(t);
      await down.kill();
      for (const call of [
        () => store.get(key),
        () => store.set(key, token(), 60_000),
        () => store.delete(key),
        () => store.singleFlight(key, async () => token(), { timeoutMs: 5_000 }),
      ]) {
        await expect(call()).rejects.toMatchObject({
          name: 'RedisTokenStoreError',
          code: 'ERR_REDIS_UNAVAILABLE',
        });
      }
      expect(events.map((e) => e.type)).toContain('redis-down');
      expect(store.isReady).toBe(false);
      const readyBefore = events.filter((e) => e.type === 'redis-ready').length;
      await down.restart();
      for (let i = 0; i < 100 && !store.isReady; i++) await new Promise((r) => setTimeout(r, 50));
      expect(events.filter((e) => e.type === 'redis-ready').length).toBeGreaterThan(readyBefore);
      // The restarted server is empty: a miss, then single flight (pub/sub subscribed again) works.
      expect(await store.get(key)).toBeUndefined();
      const again = await store.singleFlight(key, async () => token(), { timeoutMs: 5_000 });
      expect(await open().store.get(key)).toBeUndefined(); // a store on the main server does not see it
      const other = createRedisTokenStore({ url: down.url, encryptionKey: KEY_A });
      stores.push(other);
      expect(await other.get(key)).toEqual(again);
      // Notices flow again after the restart: the old store's notice connection subscribed again, so
      // it wakes as soon as the other store's token is in — the 60-s lock would outlast the test.
      const next = cacheKey();
      let fetches = 0;
      let started!: () => void;
      const holding = new Promise<void>((r) => (started = r));
      const slow = async () => {
        fetches++;
        started();
        await new Promise((r) => setTimeout(r, 200));
        return token();
      };
      const holder = other.singleFlight(next, slow, { timeoutMs: 60_000 });
      await holding;
      const waiter = store.singleFlight(next, slow, { timeoutMs: 60_000 });
      expect(await waiter).toEqual(await holder);
      expect(fetches).toBe(1);
      expect(events.filter((e) => e.type === 'lock-waiting').length).toBeGreaterThan(0);
    } finally {
      await down.stop();
    }
  }, 20_000);

  it('a store created while Redis is down reports it and rejects once the connect timeout has passed', async () => {
    const gone = await startRedis();
    await gone.kill();
    try {
      const events: RedisTokenStoreEvent[] = [];
      const store = createRedisTokenStore({
        url: gone.url,
        encryptionKey: KEY_A,
        connectTimeoutMs: 300,
        onEvent: (e) => events.push(e),
      });
      stores.push(store);
      await expect(store.get(cacheKey())).rejects.toMatchObject({ code: 'ERR_REDIS_UNAVAILABLE' });
      expect(events.some((e) => e.type === 'redis-reconnecting' || e.type === 'redis-down')).toBe(true);
    } finally {
      await gone.stop();
    }
  });
});

describe('Redis refusing a command', () => {
  it('is ERR_REDIS_COMMAND, naming the command and what to check, and reported', async () => {
    await raw.sendCommand([
      'ACL',
      'SETUSER',
      'reader',
      'on',
      '>reader-pass',
      '~*',
      '&*',
      '-@all',
      '+hmget',
      '+hello',
      '+ping',
      '+client',
      '+info',
    ]);
    const url = redis.url.replace('redis://', 'redis://reader:reader-pass@');
    const events: RedisTokenStoreEvent[] = [];
    const store = createRedisTokenStore({ url, encryptionKey: KEY_A, onEvent: (e) => events.push(e) });
    stores.push(store);
    const key = cacheKey();
    expect(await store.get(key)).toBeUndefined(); // HMGET is allowed
    const error = await store.set(key, token(), 60_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedisTokenStoreError);
    expect(error).toMatchObject({ code: 'ERR_REDIS_COMMAND' });
    expect((error as Error).message).toMatch(
      /^Redis refused EVAL(SHA)?: NOPERM .*; check the Redis user's permissions and that the server is a writable primary\.$/,
    );
    expect((error as Error).message).not.toContain('reader-pass');
    expect(events.some((e) => e.type === 'redis-error' && e.code === 'ERR_REDIS_COMMAND')).toBe(true);
  });
});

describe('a client the application owns', () => {
  it('is used as given and never closed by the store', async () => {
    const client = createClient({ url: redis.url }) as RedisClient;
    client.on('error', () => {});
    await client.connect();
    const store = createRedisTokenStore({ client, encryptionKey: KEY_A });
    const key = cacheKey();
    const t = await store.singleFlight(key, async () => token(), { timeoutMs: 5_000 });
    expect(await store.get(key)).toEqual(t);
    await store.close();
    expect(client.isReady).toBe(true);
    await expect(store.get(key)).rejects.toMatchObject({ code: 'ERR_STORE_CLOSED' });
    await expect(store.singleFlight(key, async () => token(), { timeoutMs: 1_000 })).rejects.toMatchObject({
      code: 'ERR_STORE_CLOSED',
    });
    await client.close();
  });

  it('a client that was never connected is named in the error', async () => {
    const client = createClient({ url: redis.url }) as RedisClient;
    const store = createRedisTokenStore({ client, encryptionKey: KEY_A, connectTimeoutMs: 100 });
    stores.push(store);
    await expect(store.get(cacheKey())).rejects.toThrow(/call `await client.connect\(\)`/);
  });
});

describe('options', () => {
  it('needs exactly one of url and client', () => {
    expect(() => createRedisTokenStore({ url: process.env.NO_SUCH_VARIABLE_FOR_TEST })).toThrow(
      'createRedisTokenStore needs { url } (e.g. redis://localhost:6379) or { client }; url is empty or undefined — is the variable you read it from (REDIS_URL?) set?',
    );
    // @ts-expect-error -- url and client exclude each other; plain JavaScript callers get the error.
    expect(() => createRedisTokenStore({ url: redis.url, client: raw })).toThrow(/not both/);
    expect(() => createRedisTokenStore({ url: redis.url, commandTimeoutMs: 0 })).toThrow(
      'createRedisTokenStore: commandTimeoutMs must be a finite number > 0, got 0.',
    );
  });

  it('refuses a bad option with RedisTokenStoreError ERR_INVALID_OPTION, not a TypeError', () => {
    const refused = (make: () => unknown) => {
      try {
        make();
      } catch (error) {
        return error;
      }
      return undefined;
    };
    const errors = [
      refused(() => createRedisTokenStore({ url: '' })),
      refused(() => createRedisTokenStore({ url: redis.url, namespace: 'a{b}' })),
      refused(() => createRedisTokenStore({ url: redis.url, skipMs: Number.NaN })),
    ];
    for (const error of errors) {
      expect(error).toBeInstanceOf(RedisTokenStoreError);
      expect(error).not.toBeInstanceOf(TypeError);
      expect(error).toMatchObject({ name: 'RedisTokenStoreError', code: 'ERR_INVALID_OPTION' });
    }
    // Negative control: valid options make a store (closed after the test).
    const store = refused(() => stores.push(createRedisTokenStore({ url: redis.url, encryptionKey: KEY_A })));
    expect(store).toBeUndefined();
  });
});
