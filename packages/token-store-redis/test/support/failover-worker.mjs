// One process of a fleet through a failover: a node-redis Cluster or Sentinel client the "application"
// creates and connects (with an 'error' listener of its own, or — `listener: false` — none, as the
// partners whose fleets crashed had), the Redis store on it, a token provider, and `callers` callers
// calling getToken() in a loop for `durationMs` once released with "go" on stdin. Each resolved token
// is checked against the clock at the moment its caller resumes (expiresAt and the JWT exp) and the
// caller's deadline is checked too. With `bare: true` the worker creates the client, subscribes to a
// channel as the store does, and has no store: the negative control that a lost primary does raise an
// 'error' (the process dies of it).
// Prints one JSON line at the end; tokens appear as digests only, never whole.
import { createHash } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { createTokenProvider } from '@partner-lending/auth';
import { createCluster, createSentinel } from 'redis';
import { createRedisTokenStore } from '../../dist/index.js';

const job = JSON.parse(process.env.FLEET_JOB ?? '{}');
const digest = (token) => createHash('sha256').update(token).digest('hex').slice(0, 12);
const jwtExp = (jwt) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8')).exp;

// The README's settings (unless `defaults: true`): node-redis's own reconnection of a lost node
// bounded to 500 ms, and a cluster's topology refreshed 250 ms after a node is lost (default 5 s) —
// node-redis finds the new primary only then, whatever the store does. On Sentinel, the store follows
// the sentinels' `+switch-master` itself (the README's snippet) unless `follow: false`.
const reconnectStrategy = (retries) => Math.min(50 * 2 ** retries, 500);
const sentinelOptions = {
  name: job.name,
  sentinelRootNodes: job.sentinelRootNodes,
  ...(job.defaults
    ? {}
    : {
        nodeClientOptions: { socket: { reconnectStrategy } },
        sentinelClientOptions: { socket: { reconnectStrategy } },
      }),
};
const client =
  job.topology === 'cluster'
    ? createCluster({
        rootNodes: job.rootNodes,
        defaults: { socket: { connectTimeout: 1_000, ...(job.defaults ? {} : { reconnectStrategy }) } },
        ...(job.defaults ? {} : { topologyRefreshOnReconnectionAttemptStrategy: 250 }),
      })
    : createSentinel(sentinelOptions);
if (job.listener) client.on('error', () => {});
/** When the store said Redis was back or gone, and when the client itself said it was ready (epoch ms). */
const timeline = [];
client.on('ready', () => timeline.length < 500 && timeline.push(['client-ready', Date.now()]));
/**
 * `trace: true` (the bench's FAILOVER_TRACE=1): what the client and the store did, for a slow failover's
 * account — the cluster's node events, the topology changes a Sentinel client reports, each store call
 * that failed or was the first to succeed after a failure, and event-loop stalls over 100 ms.
 */
const trace = (type, detail) => {
  if (job.trace && timeline.length < 500)
    timeline.push([type, Date.now(), String(detail ?? '').slice(0, 160)]);
};
if (job.trace) {
  for (const event of [
    'node-ready',
    'node-reconnecting',
    'node-disconnect',
    'node-error',
    'topology-change',
  ]) {
    client.on(event, (a, b) =>
      trace(event, event === 'node-error' ? `${b?.port} ${a?.message}` : (a?.port ?? JSON.stringify(a))),
    );
  }
  let last = performance.now();
  setInterval(() => {
    const now = performance.now();
    if (now - last > 120) trace('stall', Math.round(now - last - 20));
    last = now;
  }, 20).unref();
}
// Traced: a connect still pending after 10 s prints node-redis's own Sentinel trace (stderr).
const sentinelTrace = [];
if (job.trace && job.topology === 'sentinel') client.setTracer(sentinelTrace);
const connectStarted = Date.now();
let connectMs = -1;
// A process started cold during a failover does not block on connect(): node-redis's may not settle
// until the failover is over (a Cluster client waits for every primary, a Sentinel client for a valid
// one). The store takes the client as it is: calls wait connectTimeoutMs for it, then fall back.
const connecting = client.connect().then(
  () => {
    connectMs = Date.now() - connectStarted;
  },
  (error) => {
    console.error(`connect failed: ${error?.message ?? error}`);
  },
);
if (job.trace) {
  const slow = setTimeout(
    () =>
      console.error(`connect pending after 10 s; node-redis trace: ${sentinelTrace.slice(-40).join(' | ')}`),
    10_000,
  );
  connecting.finally(() => clearTimeout(slow));
}
if (!job.cold) await connecting;

const storeEvents = {};
const store = job.bare
  ? undefined
  : createRedisTokenStore({
      client,
      encryptionKey: job.encryptionKey,
      ...(job.topology === 'sentinel' ? { sentinel: job.follow === false ? false : sentinelOptions } : {}),
      onEvent: (event) => {
        storeEvents[event.type] = (storeEvents[event.type] ?? 0) + 1;
        if (
          (event.type === 'redis-ready' ||
            event.type === 'redis-down' ||
            event.type === 'redis-skipped' ||
            event.type === 'sentinel-watch' ||
            event.type === 'cluster-refresh' ||
            (job.trace && event.type === 'redis-error')) &&
          timeline.length < 500
        ) {
          timeline.push(
            event.type === 'sentinel-watch' ||
              event.type === 'cluster-refresh' ||
              event.type === 'redis-error'
              ? [event.type, Date.now(), `${event.operation ?? ''} ${event.message}`.slice(0, 160)]
              : [event.type, Date.now()],
          );
        }
      },
    });
// Traced: each store call that failed, and the first that succeeded after a failure.
let storeFailing = false;
const traced = (name, call) =>
  call.then(
    (value) => {
      if (storeFailing) trace('store-ok', name);
      storeFailing = false;
      return value;
    },
    (error) => {
      if (!storeFailing) trace('store-failed', `${name} ${error?.code ?? ''} ${error?.message ?? ''}`);
      storeFailing = true;
      throw error;
    },
  );
const tracedStore =
  store && job.trace
    ? {
        get: (key) => traced('get', store.get(key)),
        set: (...args) => traced('set', store.set(...args)),
        delete: (key) => traced('delete', store.delete(key)),
        singleFlight: (...args) => traced('singleFlight', store.singleFlight(...args)),
      }
    : store;
const provider = createTokenProvider({
  tokenUrl: job.tokenUrl,
  clientId: job.clientId,
  clientSecret: job.clientSecret,
  audience: job.audience,
  dangerouslyAllowInsecureHttp: true,
  ...(tracedStore ? { store: tracedStore } : {}),
});

// The control subscribes to a channel as the store does (its notices): node-redis reports the lost
// primary of that pub/sub connection as an 'error' of the client.
if (job.bare) await client.subscribe('partner-lending-control', () => {});
await (store ? store.get('warm-up') : Promise.resolve()).catch(() => {});
console.log('READY');
const lines = createInterface({ input: process.stdin });
await new Promise((resolve) => lines.once('line', resolve));

const started = Date.now();
// How long this process's event loop stalled (a starved process resumes its callers late).
const stalls = monitorEventLoopDelay({ resolution: 10 });
stalls.enable();
const cpuAtStart = process.cpuUsage();
// A worker started cold during a failover ends with the fleet (endAt), after at least a second of calls.
const endAt = Math.max(job.endAt ?? started + job.durationMs, started + 1_000);
const result = {
  calls: 0,
  failed: 0,
  errors: {},
  maxWaitMs: 0,
  overDeadline: 0,
  expired: 0,
  expiredByExp: 0,
  /** Least time left (ms) of a token at the moment its caller resumed. */
  minLeftMs: Number.POSITIVE_INFINITY,
  tokens: [],
};
const tokens = new Set();
const caller = async () => {
  while (Date.now() < endAt) {
    const t0 = performance.now();
    try {
      const token = await provider.getToken({ timeoutMs: job.timeoutMs });
      const now = Date.now();
      const waited = performance.now() - t0;
      if (waited > job.timeoutMs) result.overDeadline++;
      if (token.expiresAt <= now) result.expired++;
      if (jwtExp(token.accessToken) * 1000 <= now) result.expiredByExp++;
      result.minLeftMs = Math.min(result.minLeftMs, token.expiresAt - now);
      if (tokens.size < 1_000) tokens.add(digest(token.accessToken));
    } catch (error) {
      result.failed++;
      const code = error?.code ?? String(error);
      result.errors[code] = (result.errors[code] ?? 0) + 1;
      if (performance.now() - t0 > job.timeoutMs + 50) result.overDeadline++;
    }
    const waited = performance.now() - t0;
    if (waited > result.maxWaitMs) result.maxWaitMs = Math.round(waited);
    result.calls++;
    await new Promise((resolve) => setTimeout(resolve, job.intervalMs ?? 20));
  }
};
await Promise.all(Array.from({ length: job.callers ?? 5 }, caller));
result.tokens = [...tokens];
stalls.disable();
result.maxStallMs = Math.round(stalls.max / 1e6);
result.cpuMs = Math.round((process.cpuUsage(cpuAtStart).user + process.cpuUsage(cpuAtStart).system) / 1000);
result.wallMs = Date.now() - started;
console.log(JSON.stringify({ ...result, connectMs, storeEvents, timeline }));
await store?.close();
await Promise.race([client.close().catch(() => {}), new Promise((r) => setTimeout(r, 2_000))]);
lines.close();
process.exit(0);
