// Failover benchmark: repeated primary failovers under a fleet of real `node` processes on 2-s tokens,
// on a real Redis Cluster (3 primaries, 3 replicas) and a real Sentinel set (a primary, a replica and
// three sentinels). Each round SIGKILLs the primary holding the token's key, starts one more process
// cold just after, times the promotion from outside, and counts what the fleet delivered; the killed
// node is then started again as a replica, so the next round fails over again. A round without a kill
// first gives the baseline of token requests, so that each failover's extra requests are its count
// minus the baseline. Prints one line per round and the figures per topology; asserts nothing. Needs
// `pnpm build` first.
// Sizes: FAILOVERS (20 per topology), FAILOVER_TOPOLOGIES (cluster,sentinel), FAILOVER_PROCESSES (8),
// FAILOVER_CALLERS (10), FAILOVER_KILL_AT (10 s into a round), FAILOVER_SECONDS (18 per round),
// FAILOVER_COLD_AT_MS (500: the cold process, that long after the kill), FAILOVER_CLIENT_DEFAULTS=1
// (node-redis's default reconnection and topology refresh instead of the README's settings),
// FAILOVER_FOLLOW=0 (Sentinel: the store does not follow +switch-master itself, `sentinel: false`),
// FAILOVER_DOWN_AFTER_MS (Sentinel: the sentinels' down-after, 1000), FAILOVER_TRACE=1 (the timeline of
// the fleet's last process back, for each failover slower than FAILOVER_TRACE_OVER_MS, 800).
import { createHash, randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { createTokenProvider } from '@partner-lending/auth';
import { DEFAULT_NAMESPACE } from '../dist/index.js';
import { describeFailover, runFailover } from '../test/support/failover-fleet.mjs';
import { startCluster } from '../test/support/redis-cluster.mjs';
import { PRIMARY_NAME, startSentinel } from '../test/support/redis-sentinel.mjs';
import { CLIENT_ID, CLIENT_SECRET, startTokenServer } from '../test/support/token-server.mjs';

const FAILOVERS = Number(process.env.FAILOVERS ?? 20);
const TOPOLOGIES = (process.env.FAILOVER_TOPOLOGIES ?? 'cluster,sentinel').split(',');
const PROCESSES = Number(process.env.FAILOVER_PROCESSES ?? 8);
const CALLERS = Number(process.env.FAILOVER_CALLERS ?? 10);
const SECONDS = Number(process.env.FAILOVER_SECONDS ?? 18);
const KILL_AT_MS = Number(process.env.FAILOVER_KILL_AT ?? 10) * 1000;
const COLD_AT_MS = Number(process.env.FAILOVER_COLD_AT_MS ?? 500);
const DEFAULTS = process.env.FAILOVER_CLIENT_DEFAULTS === '1';
const FOLLOW = process.env.FAILOVER_FOLLOW !== '0';
/** FAILOVER_TRACE=1: the timeline of the fleet's last process back, for every failover over TRACE_OVER_MS. */
const TRACE = process.env.FAILOVER_TRACE === '1';
const TRACE_OVER_MS = Number(process.env.FAILOVER_TRACE_OVER_MS ?? 800);
/** FAILOVER_DOWN_AFTER_MS: the sentinels' down-after (1000). */
const DOWN_AFTER_MS = Number(process.env.FAILOVER_DOWN_AFTER_MS ?? 1_000);
const DEADLINE_MS = 3_000;
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
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

async function bench(topology) {
  const tokens = await startTokenServer({ ttlSeconds: 2, delayMs: 50 });
  const servers =
    topology === 'cluster' ? await startCluster() : await startSentinel({ downAfterMs: DOWN_AFTER_MS });
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
    timeoutMs: DEADLINE_MS,
    callers: CALLERS,
    defaults: DEFAULTS,
    follow: FOLLOW,
    trace: TRACE,
  };
  const listeners = (i) => i % 2 === 0;
  const totals = {
    expired: 0,
    foreign: 0,
    crashesWithListener: 0,
    crashesWithoutListener: 0,
    overDeadline: 0,
    failedOverDeadline: 0,
    failed: 0,
    neverBack: 0,
    calls: 0,
  };
  const extra = [];
  let withinOk = 0;
  const fleetBack = [];
  const loadAtStart = load();
  const back = [];
  const backClient = [];
  const promoted = [];
  const slowest = [];
  /** Per failover: the fleet back (ms; a process never back counts as not back), calls over the deadline, load. */
  const trials = [];
  try {
    // The same fleet every round: the baseline (no kill) and each failover.
    const fleet = {
      job,
      processes: PROCESSES,
      listeners,
      tokens,
      killAtMs: KILL_AT_MS,
      coldAtMs: COLD_AT_MS,
    };
    const baseline = await runFailover(fleet);
    console.log(
      `${topology} baseline (no failover): ${baseline.requestsFromKill} token requests in the last ${SECONDS - KILL_AT_MS / 1000} s, ${baseline.expired} expired, slowest ${baseline.maxWaitMs} ms`,
    );
    for (let round = 1; round <= FAILOVERS; round++) {
      let killed = 0;
      const outcome = await runFailover({
        ...fleet,
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
      if (TRACE && ((outcome.fleetBackMs ?? 0) > TRACE_OVER_MS || outcome.overDeadline > 0)) {
        console.log(
          `  the last process back (ms from the promotion; the kill at ${outcome.killedAt - outcome.promotedAt}):`,
        );
        for (const line of outcome.lastBackTimeline) console.log(`    ${line}`);
      }
      totals.expired += outcome.expired;
      totals.foreign += outcome.foreign;
      totals.crashesWithListener += outcome.crashesWithListener;
      totals.crashesWithoutListener += outcome.crashesWithoutListener;
      totals.overDeadline += outcome.overDeadline;
      if (outcome.overDeadline > 0) totals.failedOverDeadline++;
      totals.calls += outcome.calls;
      if (outcome.fleetBackMs !== undefined) fleetBack.push(outcome.fleetBackMs);
      totals.failed += outcome.failed;
      totals.neverBack += outcome.neverBack;
      extra.push(more);
      back.push(...outcome.backAfterPromotionMs);
      backClient.push(...outcome.backAfterClientReadyMs);
      promoted.push(outcome.promotedAt - outcome.killedAt);
      slowest.push(outcome.maxWaitMs);
      trials.push(
        `${outcome.neverBack ? 'never' : (outcome.fleetBackMs ?? 'n/a')}/${outcome.overDeadline}/${loadavg()[0].toFixed(1)}`,
      );
      if (outcome.neverBack === 0 && outcome.fleetBackMs !== undefined && outcome.fleetBackMs <= 1_000)
        withinOk++;
      await servers.restart(killed);
      if (topology === 'cluster') await servers.waitHealthy();
    }
  } finally {
    await servers.stop();
    await tokens.close();
  }
  console.log(
    [
      '',
      `${topology}: ${FAILOVERS} failovers, ${PROCESSES} processes × ${CALLERS} callers + 1 cold ${COLD_AT_MS} ms after the kill, 2-s tokens, ${DEADLINE_MS / 1000}-s deadline${DEFAULTS ? ', node-redis defaults' : ''}${topology === 'sentinel' && !FOLLOW ? ', sentinel: false' : ''}; load average ${loadAtStart} at the start, ${load()} at the end`,
      `  expired delivered: ${totals.expired}; foreign: ${totals.foreign}; crashes: ${totals.crashesWithListener} with a listener of the caller's own, ${totals.crashesWithoutListener} without`,
      `  calls over the deadline: ${totals.overDeadline} of ${totals.calls} (in ${totals.failedOverDeadline} of ${FAILOVERS} failovers); failed calls: ${totals.failed}; processes never back: ${totals.neverBack}`,
      `  back on one shared token after the promotion (the fleet's last process back on Redis): ${range(fleetBack)} ms, within 1 s (every process back) in ${withinOk} of ${FAILOVERS}`,
      `  per failover (back ms / calls over the deadline / load): ${trials.join(', ')}`,
      `  per process: ${range(back)} ms${backClient.length ? `; after the client said ready: ${range(backClient)} ms` : ''}`,
      `  promotion after the SIGKILL: ${range(promoted)} ms`,
      `  extra token requests per failover: ${range(extra)}`,
      `  slowest call per failover: ${range(slowest)} ms`,
      '',
    ].join('\n'),
  );
}

for (const topology of TOPOLOGIES) await bench(topology);
