// A fleet of real `node` processes sharing one real redis-server and one counting token endpoint on
// 127.0.0.1. The workers load the built package (dist/) and the built auth package: build first.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FleetJob, runFleet, startWorker } from './support/fleet.js';
import { type RedisServer, startRedis } from './support/redis-server.mjs';
import { startTokenServer, type TokenServer } from './support/token-server.mjs';

const PROCESSES = 6;
const CALLERS = 25;
const encryptionKey = randomBytes(32).toString('base64');

let redis: RedisServer;
let server: TokenServer;
let keySeq = 0;

function job(overrides: Partial<FleetJob>): FleetJob {
  return {
    mode: 'single-flight',
    redisUrl: redis.url,
    tokenUrl: server.tokenUrl,
    audience: server.audience,
    callers: CALLERS,
    encryptionKey,
    key: `fleet-${process.pid}-${keySeq++}`,
    ...overrides,
  };
}

beforeAll(async () => {
  for (const dir of ['../dist/index.js', '../../auth/dist/index.js']) {
    if (!existsSync(fileURLToPath(new URL(dir, import.meta.url)))) {
      throw new Error(`${dir} is missing: run \`pnpm build\` at the repository root before this test.`);
    }
  }
  redis = await startRedis();
  server = await startTokenServer({ delayMs: 150 });
}, 30_000);

afterAll(async () => {
  await server?.close();
  await redis?.stop();
});

describe('a fleet of processes', { timeout: 60_000 }, () => {
  it(`${PROCESSES} processes × ${CALLERS} cold callers of store.singleFlight → 1 token request, one token everywhere`, async () => {
    const before = server.tokenRequests();
    const results = await runFleet(PROCESSES, job({}));
    expect(server.tokenRequests() - before).toBe(1);
    expect(results.every((r) => r.ok === CALLERS && r.errors.length === 0)).toBe(true);
    expect(new Set(results.flatMap((r) => r.tokens)).size).toBe(1);
    // Exactly one process fetched; the others waited for its notice.
    expect(results.filter((r) => r.events.includes('lock-acquired'))).toHaveLength(1);
    expect(results.filter((r) => r.events.includes('lock-waiting')).length).toBeGreaterThan(0);
  });

  it(`${PROCESSES} processes × ${CALLERS} cold callers through createTokenProvider({ store }) → 1 token request`, async () => {
    const before = server.tokenRequests();
    const results = await runFleet(PROCESSES, job({ mode: 'provider', key: undefined }));
    expect(results.map((r) => r.errors)).toEqual(results.map(() => []));
    expect(server.tokenRequests() - before).toBe(1);
    expect(new Set(results.flatMap((r) => r.tokens)).size).toBe(1);
  });

  it('the control: the same fleet with each process on its own memory store asks once per process', async () => {
    const before = server.tokenRequests();
    const results = await runFleet(PROCESSES, job({ mode: 'provider-memory' }));
    expect(results.every((r) => r.errors.length === 0)).toBe(true);
    expect(server.tokenRequests() - before).toBe(PROCESSES);
    expect(new Set(results.flatMap((r) => r.tokens)).size).toBe(PROCESSES);
  });

  it('a lock holder that is killed releases by expiry, and a waiting process takes over', async () => {
    const before = server.tokenRequests();
    const shared = job({ callers: 5 });
    const holder = await startWorker({ ...shared, mode: 'hold', timeoutMs: 1_500 });
    holder.go();
    await holder.waitFor('LOCKED');
    const waiter = await startWorker({ ...shared, timeoutMs: 20_000 });
    waiter.go();
    await new Promise((r) => setTimeout(r, 200));
    holder.child.kill('SIGKILL');
    const result = await waiter.result();
    expect(result.errors).toEqual([]);
    expect(result.ok).toBe(5);
    expect(result.tokens).toHaveLength(1);
    expect(result.events).toContain('lock-waiting');
    expect(result.events).toContain('lock-acquired');
    expect(server.tokenRequests() - before).toBe(1); // the killed holder never reached the endpoint
  });

  it('a killed holder of a long flight releases within its lease, not at the end of the flight', async () => {
    const before = server.tokenRequests();
    const shared = job({ callers: 5, lockLeaseMs: 400 });
    // The holder's flight may last a minute; the waiter gives up after 10 s: only the lease lets it in.
    const holder = await startWorker({ ...shared, mode: 'hold', timeoutMs: 60_000 });
    holder.go();
    await holder.waitFor('LOCKED');
    const waiter = await startWorker({ ...shared, timeoutMs: 10_000 });
    waiter.go();
    await new Promise((r) => setTimeout(r, 200));
    holder.child.kill('SIGKILL');
    const result = await waiter.result();
    expect(result.errors).toEqual([]);
    expect(result.ok).toBe(5);
    expect(result.events).toContain('lock-acquired');
    expect(server.tokenRequests() - before).toBe(1);
  });
});
