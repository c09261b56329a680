// The hand-over rule on a host that stalls: callers sharing one token request through the Redis store
// each stall the event loop (a busy-wait) when they resume. Every caller must resume with a token
// that has not expired (the provider checks each hand-over on a turn of its own and renews a token
// with less than its safety window left). The negative control hands the same answer to the same
// stalling callers at once, as a shared promise does (and as the provider did): some resume with an
// expired token. Real redis-server, 2-s tokens with a whole-second exp.
import { randomBytes } from 'node:crypto';
import { type AccessToken, createTokenProvider } from '@partner-lending/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisTokenStore, type RedisTokenStore } from '../src/index.js';
import { type RedisServer, startRedis } from './support/redis-server.mjs';
import { CLIENT_ID, CLIENT_SECRET, startTokenServer, type TokenServer } from './support/token-server.mjs';

const encryptionKey = randomBytes(32).toString('base64');
let redis: RedisServer;
let server: TokenServer;
const CALLERS = 8;
const STALL_MS = 350;

beforeAll(async () => {
  redis = await startRedis();
  server = await startTokenServer({ ttlSeconds: 2 });
}, 30_000);

afterAll(async () => {
  await server?.close();
  await redis?.stop();
});

/** Blocks the event loop (a caller's synchronous work, a GC pause, a starved CPU). */
const stall = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
};

const jwtExp = (jwt: string) =>
  (JSON.parse(Buffer.from(jwt.split('.')[1] as string, 'base64url').toString('utf8')) as { exp: number }).exp;

const providerOn = (store: RedisTokenStore) =>
  createTokenProvider({
    tokenUrl: server.tokenUrl,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    audience: server.audience,
    dangerouslyAllowInsecureHttp: true,
    store,
  });

/** What each caller found when it resumed: ms left by expiresAt and by the JWT's exp. */
const resumeCheck = (token: AccessToken) => {
  const now = Date.now();
  const left = { byExpiresAt: token.expiresAt - now, byExp: jwtExp(token.accessToken) * 1000 - now };
  stall(STALL_MS);
  return left;
};

describe('hand-over on a host that stalls', { timeout: 60_000 }, () => {
  it(`${CALLERS} callers sharing one token request, each stalling the loop ${STALL_MS} ms when it resumes: none resumes with an expired token`, async () => {
    const store = createRedisTokenStore({ url: redis.url, encryptionKey, namespace: 'hand-over:' });
    try {
      const provider = providerOn(store);
      const before = server.tokenRequests();
      const lefts = await Promise.all(
        Array.from({ length: CALLERS }, () => provider.getToken().then(resumeCheck)),
      );
      const least = Math.min(...lefts.map((l) => Math.min(l.byExpiresAt, l.byExp)));
      console.log(
        `hand-over: ${CALLERS} callers stalling ${STALL_MS} ms each; least left at resume ${least} ms; ${server.tokenRequests() - before} token requests (renewals instead of late hand-overs)`,
      );
      expect(least).toBeGreaterThan(0);
      // The stalls outlast a 2-s token: the provider had to renew, not only re-check.
      expect(server.tokenRequests() - before).toBeGreaterThan(1);
    } finally {
      await store.close();
    }
  });

  it('negative control: the same stalling callers handed one answer at once (a shared promise) resume with expired tokens', async () => {
    const store = createRedisTokenStore({ url: redis.url, encryptionKey, namespace: 'hand-over-control:' });
    try {
      const shared = providerOn(store).getToken();
      const lefts = await Promise.all(Array.from({ length: CALLERS }, () => shared.then(resumeCheck)));
      const expired = lefts.filter((l) => l.byExpiresAt <= 0 || l.byExp <= 0).length;
      console.log(`hand-over control: ${expired} of ${CALLERS} callers resumed with an expired token`);
      expect(expired).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
  });
});
