// The store's own command deadline (src/deadline.ts) against a real redis-server: an answer that
// arrived while this process's event loop was stalled is read, not taken for a hung Redis; a server
// that does not answer still fails the command.
import { randomBytes } from 'node:crypto';
import type { StoredToken } from '@partner-lending/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisTokenStore, type RedisTokenStoreEvent } from '../src/index.js';
import { type RedisServer, startRedis } from './support/redis-server.mjs';

const encryptionKey = randomBytes(32).toString('base64');
const COMMAND_TIMEOUT_MS = 200;
let redis: RedisServer;

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  redis?.resume();
  await redis?.stop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Blocks this process's event loop for `ms`, as a starved host or a long synchronous task does. */
function stall(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy: no timer, no socket read runs meanwhile
  }
}

function token(): StoredToken {
  return {
    accessToken: `eyJhbGciOiJFUzI1NiJ9.${randomBytes(24).toString('base64url')}.sig`,
    tokenType: 'Bearer',
    expiresAt: Date.now() + 60_000,
    obtainedAt: Date.now(),
    grantedScopes: [],
    partnerId: 'partner-1',
    issuer: 'https://auth.test/',
    jti: randomBytes(8).toString('hex'),
  };
}

/**
 * A get written to a paused server; the server resumes (and answers) while this process is stalled
 * for three deadlines. Resolves with the get's outcome and the store's events.
 */
async function getThroughStall(resume: boolean) {
  const events: RedisTokenStoreEvent[] = [];
  const store = createRedisTokenStore({
    url: redis.url,
    encryptionKey,
    commandTimeoutMs: COMMAND_TIMEOUT_MS,
    onEvent: (e) => events.push(e),
  });
  try {
    const stored = token();
    await store.set('stalled', stored, 60_000);
    redis.pause();
    const pending = store.get('stalled').then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    // The command is written (node-redis writes on the next turn) and nothing answers yet…
    await sleep(30);
    // …then the server answers while this process is stalled past the deadline: the answer waits in
    // the socket, and when the loop runs again Node fires the due timer before it reads the socket.
    // Stalled in the check phase (setImmediate), as after a socket's callback: a stall inside the timers
    // phase would not let the deadline's timer fire before the next read.
    await new Promise((resolve) => setImmediate(resolve));
    if (resume) redis.resume();
    stall(3 * COMMAND_TIMEOUT_MS);
    const outcome = await pending;
    return { outcome, stored, events };
  } finally {
    redis.resume();
    await store.close();
  }
}

describe('the command deadline and a stalled event loop', () => {
  it('an answer that arrived while the process was stalled past the deadline is read: no timeout, Redis not skipped', async () => {
    const { outcome, stored, events } = await getThroughStall(true);
    expect(outcome).toEqual({ value: expect.objectContaining({ jti: stored.jti }) });
    expect(events.map((e) => e.type)).not.toContain('redis-skipped');
  });

  it('the control: a server that does not answer still fails the command after the same stall (ERR_REDIS_UNAVAILABLE), and Redis is skipped', async () => {
    const { outcome, events } = await getThroughStall(false);
    expect(outcome).toEqual({ error: expect.objectContaining({ code: 'ERR_REDIS_UNAVAILABLE' }) });
    expect(events.map((e) => e.type)).toContain('redis-skipped');
  });
});
