// Fleet benchmark: N real `node` processes, each with a token provider, against one counting token
// endpoint and one real redis-server on 127.0.0.1, with the Redis store beside the same fleet on the
// default in-memory store. Prints figures and ratios; asserts nothing. Needs `pnpm build` first.
// Sizes: FLEET_PROCESSES (8), FLEET_COLD_CALLERS (250), FLEET_CALLERS (50), FLEET_LIFETIMES (10),
// FLEET_TOKEN_SECONDS (2).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { startMock } from '@partner-lending/mock';
import { startRedis } from '../test/support/redis-server.mjs';
import { startTokenServer } from '../test/support/token-server.mjs';

const PROCESSES = Number(process.env.FLEET_PROCESSES ?? 8);
const COLD_CALLERS = Number(process.env.FLEET_COLD_CALLERS ?? 250);
const CALLERS = Number(process.env.FLEET_CALLERS ?? 50);
const LIFETIMES = Number(process.env.FLEET_LIFETIMES ?? 10);
const TOKEN_SECONDS = Number(process.env.FLEET_TOKEN_SECONDS ?? 2);
const worker = fileURLToPath(new URL('./fleet-worker.mjs', import.meta.url));
const encryptionKey = randomBytes(32).toString('base64');

function start(job) {
  const child = spawn(process.execPath, [worker], {
    env: { ...process.env, FLEET_JOB: JSON.stringify(job), NODE_NO_WARNINGS: '1' },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  let onLine = () => {};
  child.stdout.on('data', (chunk) => {
    out += chunk;
    onLine();
  });
  const ready = new Promise((resolve, reject) => {
    onLine = () => out.includes('READY\n') && resolve();
    child.once('exit', (code) => reject(new Error(`worker exited (${code}) before READY: ${out}`)));
  });
  const done = new Promise((resolve, reject) =>
    child.once('exit', (code) => {
      const last = out.trim().split('\n').pop() ?? '';
      if (code === 0 && last.startsWith('{')) resolve(JSON.parse(last));
      else reject(new Error(`worker exited with ${code}: ${out}`));
    }),
  );
  return { ready, done, go: () => child.stdin.write('go\n') };
}

/** Starts the fleet, waits until every process is ready, releases it, and sums the counts. */
async function fleet(job, during) {
  const workers = Array.from({ length: PROCESSES }, () => start(job));
  await Promise.all(workers.map((w) => w.ready));
  for (const w of workers) w.go();
  const duringResult = during ? await during() : undefined;
  const results = await Promise.all(workers.map((w) => w.done));
  const sum = { calls: 0, failed: 0, expired: 0, errors: {}, storeErrors: {}, readyAt: [] };
  for (const r of results) {
    sum.calls += r.calls;
    sum.failed += r.failed;
    sum.expired += r.expired;
    for (const [k, v] of Object.entries(r.errors)) sum.errors[k] = (sum.errors[k] ?? 0) + v;
    for (const [k, v] of Object.entries(r.storeErrors)) sum.storeErrors[k] = (sum.storeErrors[k] ?? 0) + v;
    sum.readyAt.push(r.readyAt);
  }
  return { ...sum, during: duringResult };
}

const fmt = (n, digits = 2) => (Number.isInteger(n) ? String(n) : n.toFixed(digits));
const ratio = (a, b) => (b === 0 ? 'n/a' : `${fmt(a / b)}×`);

const redis = await startRedis();
const server = await startTokenServer({ ttlSeconds: 3600, delayMs: 20 });
const base = { redisUrl: redis.url, tokenUrl: server.tokenUrl, audience: server.audience, encryptionKey };
const rows = [];
try {
  console.log(
    `fleet benchmark: ${PROCESSES} processes, Node ${process.version}, redis-server on ${redis.url}`,
  );

  // 1. Cold start.
  for (const store of ['redis', 'memory']) {
    const before = server.tokenRequests();
    const r = await fleet({ ...base, store, mode: 'cold', callers: COLD_CALLERS });
    rows.push({ scenario: 'cold', store, requests: server.tokenRequests() - before, ...r });
  }
  const [coldRedis, coldMemory] = rows;
  console.log(
    `\n1. cold start, ${PROCESSES} processes × ${COLD_CALLERS} concurrent calls (goal: 1 token request)\n` +
      `   redis store : ${coldRedis.requests} token requests, ${coldRedis.failed} failed of ${coldRedis.calls} calls\n` +
      `   memory store: ${coldMemory.requests} token requests, ${coldMemory.failed} failed of ${coldMemory.calls} calls\n` +
      `   memory/redis: ${ratio(coldMemory.requests, coldRedis.requests)} token requests`,
  );

  // 2. Short-lived tokens over several lifetimes.
  server.setTtlSeconds(TOKEN_SECONDS);
  const durationMs = LIFETIMES * TOKEN_SECONDS * 1000;
  const soak = {};
  for (const store of ['redis', 'memory']) {
    // An empty Redis (nothing persisted), so that every process starts cold with a short token.
    await redis.restart();
    const before = server.tokenRequests();
    const r = await fleet({ ...base, store, mode: 'soak', callers: CALLERS, durationMs });
    soak[store] = { requests: server.tokenRequests() - before, ...r };
  }
  const lifetimes = LIFETIMES;
  console.log(
    `\n2. ${PROCESSES} processes × ${CALLERS} callers over ${LIFETIMES} lifetimes of ${TOKEN_SECONDS}-s tokens (goal: ≤ 1.2 token requests per lifetime, 0 failed)\n` +
      `   redis store : ${soak.redis.requests} token requests = ${fmt(soak.redis.requests / lifetimes)} per lifetime, ${soak.redis.failed} failed of ${soak.redis.calls} calls\n` +
      `   memory store: ${soak.memory.requests} token requests = ${fmt(soak.memory.requests / lifetimes)} per lifetime, ${soak.memory.failed} failed of ${soak.memory.calls} calls\n` +
      `   memory/redis: ${ratio(soak.memory.requests, soak.redis.requests)} token requests`,
  );

  // 3. Redis killed and restarted in the middle of the same run.
  await redis.restart();
  const downAt = Math.round(durationMs * 0.3);
  const upAt = Math.round(durationMs * 0.6);
  const before = server.tokenRequests();
  const outage = await fleet(
    { ...base, store: 'redis', mode: 'soak', callers: CALLERS, durationMs },
    async () => {
      await new Promise((r) => setTimeout(r, downAt));
      const atKill = server.tokenRequests();
      await redis.kill();
      await new Promise((r) => setTimeout(r, upAt - downAt));
      const atRestart = server.tokenRequests();
      await redis.restart();
      const restartedAt = Date.now();
      // Token requests from the restart on, until every store has reconnected (its backoff).
      const requests = [];
      for (let t = 0; t < durationMs - upAt; t += 50) {
        requests.push([Date.now(), server.tokenRequests()]);
        await new Promise((r) => setTimeout(r, 50));
      }
      return { whileDown: atRestart - atKill, restartedAt, requests };
    },
  );
  const outageRequests = server.tokenRequests() - before;
  const downLifetimes = (upAt - downAt) / (TOKEN_SECONDS * 1000);
  const { restartedAt, requests } = outage.during;
  // Each process's first redis-ready after the restart: when its store was back.
  const back = outage.readyAt.map((times) => times.find((t) => t >= restartedAt - 50) ?? Number.NaN);
  const allBack = Math.max(...back);
  const atAllBack = requests.find(([t]) => t >= allBack)?.[1] ?? server.tokenRequests();
  const atRestart = requests[0]?.[1] ?? 0;
  console.log(
    `\n3. the same fleet with redis-server killed at ${downAt / 1000} s and restarted at ${upAt / 1000} s (goal: 0 failed)\n` +
      `   failed calls: ${outage.failed} of ${outage.calls}${outage.failed ? ` (${JSON.stringify(outage.errors)})` : ''}\n` +
      `   token requests while Redis was down: ${outage.during.whileDown} in ${fmt(downLifetimes, 1)} lifetimes = ${fmt(outage.during.whileDown / downLifetimes)} per lifetime (each process asks for itself, as the memory-store fleet: ${fmt(soak.memory.requests / lifetimes)})\n` +
      `   stores reconnected ${fmt(Math.min(...back) - restartedAt, 0)}–${fmt(allBack - restartedAt, 0)} ms after the restart (backoff with jitter); token requests meanwhile: ${atAllBack - atRestart}\n` +
      `   token requests over the whole run: ${outageRequests} = ${fmt(outageRequests / lifetimes)} per lifetime (${fmt(soak.redis.requests / lifetimes)} without the outage)\n` +
      `   store failures reported through onEvent: ${JSON.stringify(outage.storeErrors)}`,
  );

  // 4. The project's mock, 2-s tokens, the same fleet. The lifetime is what the endpoint grants: the
  //    deployed profile answers expires_in 1 (a second less than the JWT's 2-s exp, as the deployed
  //    service does), the RFC 9068 profile expires_in 2 with exp a whole second.
  const MOCK_MS = 12_000;
  console.log(
    `\n4. the mock's 2-s tokens, ${PROCESSES} processes × ${CALLERS} callers, ${MOCK_MS / 1000} s (goal: ≤ 1.2 token requests per lifetime, 0 expired)`,
  );
  for (const profile of ['deployed', 'rfc9068']) {
    const mock = await startMock({ tokenTtlSeconds: 2, profile });
    const [client] = mock.clients;
    const lifetimeMs = profile === 'deployed' ? 1_000 : 2_000;
    const line = [];
    for (const store of ['redis', 'memory']) {
      await redis.restart();
      const before = mock.tokenRequestCount();
      const r = await fleet({
        ...base,
        tokenUrl: mock.tokenUrl,
        audience: mock.audience,
        clientId: client.clientId,
        clientSecret: client.clientSecret,
        store,
        mode: 'soak',
        callers: CALLERS,
        durationMs: MOCK_MS,
      });
      const requests = mock.tokenRequestCount() - before;
      line.push({ store, requests, perLifetime: requests / (MOCK_MS / lifetimeMs), ...r });
    }
    await mock.close();
    const [withRedis, alone] = line;
    console.log(
      `   ${profile.padEnd(8)} (lifetime ${lifetimeMs} ms): redis store ${withRedis.requests} token requests = ${fmt(withRedis.perLifetime)} per lifetime, ${withRedis.expired} expired, ${withRedis.failed} failed of ${withRedis.calls}; memory store ${alone.requests} = ${fmt(alone.perLifetime)} per lifetime; memory/redis ${ratio(alone.requests, withRedis.requests)}`,
    );
  }
} finally {
  await server.close();
  await redis.stop();
}
