// Failover benchmark: repeated primary failovers under a fleet of real `node` processes on 2-s tokens,
// on a real Redis Cluster (3 primaries, 3 replicas) and a real Sentinel set (a primary, a replica and
// a sentinel). Each round SIGKILLs the primary holding the token's key, times the promotion from
// outside, and counts what the fleet delivered; the killed node is then started again as a replica,
// so the next round fails over again. A round without a kill first gives the baseline of token
// requests, so that each failover's extra requests are its count minus the baseline. Prints one line
// per round and the ranges; asserts nothing. Needs `pnpm build` first.
// Sizes: FAILOVERS (20 per topology), FAILOVER_TOPOLOGIES (cluster,sentinel), FAILOVER_PROCESSES (6),
// FAILOVER_CALLERS (5), FAILOVER_SECONDS (10 per round, the kill at 3 s), FAILOVER_CLIENT_DEFAULTS=1
// (node-redis's default reconnection and topology refresh instead of the README's settings).
import { createHash, randomBytes } from 'node:crypto';
import { createTokenProvider } from '@partner-lending/auth';
import { DEFAULT_NAMESPACE } from '../dist/index.js';
import { describeFailover, runFailover } from '../test/support/failover-fleet.mjs';
import { startCluster } from '../test/support/redis-cluster.mjs';
import { PRIMARY_NAME, startSentinel } from '../test/support/redis-sentinel.mjs';
import { CLIENT_ID, CLIENT_SECRET, startTokenServer } from '../test/support/token-server.mjs';

const FAILOVERS = Number(process.env.FAILOVERS ?? 20);
const TOPOLOGIES = (process.env.FAILOVER_TOPOLOGIES ?? 'cluster,sentinel').split(',');
const PROCESSES = Number(process.env.FAILOVER_PROCESSES ?? 6);
const CALLERS = Number(process.env.FAILOVER_CALLERS ?? 5);
const SECONDS = Number(process.env.FAILOVER_SECONDS ?? 10);
const DEFAULTS = process.env.FAILOVER_CLIENT_DEFAULTS === '1';
const KILL_AT_MS = 3_000;
const encryptionKey = randomBytes(32).toString('base64');

/**
 * The Redis key of the provider's token, for the cluster's slot: the cache key a provider hands its
 * store (recorded through a store that holds nothing), hashed as the store names it.
 */
async function tokenKey(tokens) {
  let seen = '';
  await createTokenProvider({
    tokenUrl: tokens.tokenUrl,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    audience: tokens.audience,
    dangerouslyAllowInsecureHttp: true,
    store: {
      get: async (key) => {
        seen = key;
        return undefined;
      },
      set: async () => {},
      delete: async () => {},
    },
  }).getToken();
  const tag = createHash('sha256').update(seen).digest('hex').slice(0, 32);
  return `${DEFAULT_NAMESPACE}{${tag}}:token`;
}

const range = (values) => {
  if (!values.length) return 'n/a';
  const sorted = [...values].sort((a, b) => a - b);
  return `${sorted[0]}–${sorted.at(-1)} (median ${sorted[Math.floor(sorted.length / 2)]})`;
};

async function bench(topology) {
  const tokens = await startTokenServer({ ttlSeconds: 2, delayMs: 50 });
  const servers = topology === 'cluster' ? await startCluster() : await startSentinel();
  const key = await tokenKey(tokens);
  const primary = () => (topology === 'cluster' ? servers.primaryOf(key) : servers.primaryPort());
  const job = {
    topology,
    ...(topology === 'cluster'
      ? { rootNodes: servers.rootNodes }
      : { sentinelRootNodes: servers.sentinelRootNodes, name: PRIMARY_NAME }),
    tokenUrl: tokens.tokenUrl,
    audience: tokens.audience,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    encryptionKey,
    durationMs: SECONDS * 1000,
    timeoutMs: 3_000,
    callers: CALLERS,
    defaults: DEFAULTS,
  };
  const listeners = (i) => i % 2 === 0;
  const totals = { expired: 0, foreign: 0, crashes: 0, overDeadline: 0, failed: 0, neverBack: 0 };
  const extra = [];
  const back = [];
  const backClient = [];
  const promoted = [];
  const slowest = [];
  try {
    const baseline = await runFailover({
      job,
      processes: PROCESSES,
      listeners,
      tokens,
      killAtMs: KILL_AT_MS,
    });
    console.log(
      `${topology} baseline (no failover): ${baseline.requestsFromKill} token requests in the last ${SECONDS - KILL_AT_MS / 1000} s, ${baseline.expired} expired, slowest ${baseline.maxWaitMs} ms`,
    );
    for (let round = 1; round <= FAILOVERS; round++) {
      let killed = 0;
      const outcome = await runFailover({
        job,
        processes: PROCESSES,
        listeners,
        tokens,
        killAtMs: KILL_AT_MS,
        kill: async () => {
          killed = await primary();
          await servers.kill(killed);
          return killed;
        },
        primary,
      });
      const more = outcome.requestsFromKill - baseline.requestsFromKill;
      console.log(`#${round} ${describeFailover(topology, outcome)}; ${more} more than the baseline`);
      for (const c of outcome.crashes) console.log(`  crash: ${c}`);
      totals.expired += outcome.expired;
      totals.foreign += outcome.foreign;
      totals.crashes += outcome.crashes.length;
      totals.overDeadline += outcome.overDeadline;
      totals.failed += outcome.failed;
      totals.neverBack += outcome.neverBack;
      extra.push(more);
      back.push(...outcome.backAfterPromotionMs);
      backClient.push(...outcome.backAfterClientReadyMs);
      promoted.push(outcome.promotedAt - outcome.killedAt);
      slowest.push(outcome.maxWaitMs);
      await servers.restart(killed);
      if (topology === 'cluster') await servers.waitHealthy();
    }
  } finally {
    await servers.stop();
    await tokens.close();
  }
  console.log(
    `\n${topology}: ${FAILOVERS} failovers, ${PROCESSES} processes × ${CALLERS} callers, 2-s tokens${DEFAULTS ? ', node-redis defaults' : ''}: ${totals.expired} expired, ${totals.foreign} foreign, ${totals.crashes} crashes, ${totals.failed} failed calls, ${totals.overDeadline} over the 3-s deadline, ${totals.neverBack} never back\n  promotion after the SIGKILL: ${range(promoted)} ms\n  back on Redis after the promotion (per process): ${range(back)} ms\n  back after the client said ready (Sentinel): ${range(backClient)} ms\n  extra token requests per failover: ${range(extra)}\n  slowest call per failover: ${range(slowest)} ms\n`,
  );
}

for (const topology of TOPOLOGIES) await bench(topology);
