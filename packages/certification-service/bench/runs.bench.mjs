// The service against the local stage it hosts, on the same plan (the default certification plan:
// every scenario, 5-s tokens for the first 15 s), measured in the same run on the same machine. Build
// first (`pnpm build`). Stage delays are 0 on both sides, so that what is measured is the work done.
//
// (a) Throughput: one run with BENCH_IN_FLIGHT (64,128) calls always in flight for BENCH_THROUGHPUT_SECONDS
//     (5): a local stage of `partner-conformance client`, then one service instance on each store (a new
//     run each time), BENCH_ROUNDS (3) rounds alternating them. Prints calls/s and the ratio of the
//     medians service/local. Target (issue): ≥ 0.5.
// (b) Cost: what one request costs the server, requests sent one at a time by the
//     load process (BENCH_COST_REQUESTS (1500) token requests, then as many API calls), BENCH_COST_ROUNDS
//     (4) rounds alternating a local stage and a run of the service on each store, the first a warm-up:
//     this process's HTTP-thread active time and CPU per request, and the medians service/local.
// (c) Latency: BENCH_RUNS (50) runs × 10 calls/s for BENCH_SECONDS (20), open loop (calls go out at
//     fixed times whatever the answers; latency from the time a call was meant to be sent), the runs
//     starting together and then spread over a token lifetime: as many local stages, then one service
//     instance on each store, BENCH_LATENCY_ROUNDS (3) rounds alternating them. Prints the latency the
//     service adds (p50, p99) in each round, the exchanges lost (answered, missing from the session:
//     must be 0) and the time to judge a run. Target: p99 added under 5 ms with the runs starting
//     together, on the median of the rounds.
// BENCH_JOURNAL_FILE=0 turns the embedded store's journal file off, BENCH_LISTEN_BACKLOG sets the listen
// backlog, BENCH_LISTEN_SOCKETS the handles listening on the port (to compare). BENCH_STORES takes a list of
// stores (default embedded,postgres,postgres-journal): PGlite; PostgreSQL shared by instances (one instance
// measured); PostgreSQL served by one instance with a journal directory; postgres-N: N instances (2 to 9)
// sharing one PostgreSQL, each run's calls sent to each in turn, so that every call is served where the
// one before it was not (throughput then also prints the ratio to `postgres`, one instance, when both
// are measured; target ≥ 1.6 for 2 where the machine has the cores) (the local stages are measured in the same run either way); BENCH_TRACE=1 prints the slowest call of each 500 ms of
// the first BENCH_TRACE_SECONDS (5), local stages against the service, and the service's accept queue; BENCH_STARTS=together|spread one start only; BENCH_PARTS=throughput|cost|latency one part only (or a list). Each latency
// line also says how many statements the service sent per call (round trips to the database). The
// journeys run in a process of their own (bench/load.mjs). PASS/FAIL lines compare with the targets.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { certificationPlan, startStage } from '@partner-lending/conformance';
import pg from 'pg';
import { addPartner, loadSigningKey, metricsRegistry, openDatabase, startService } from '../dist/index.js';
import { postgresBin, startPostgres } from '../test/support/postgres.mjs';
import {
  bySlot,
  cpuLine,
  cpuPerCall,
  journeys,
  load,
  median,
  ms,
  quantile,
  signed,
  summary,
  threadTimes,
} from './measure.mjs';

const runs = Number(process.env.BENCH_RUNS ?? 50);
const seconds = Number(process.env.BENCH_SECONDS ?? 20);
const rate = 10; // calls per second per run
const inFlights = (process.env.BENCH_IN_FLIGHT ?? '64,128').split(',').map(Number);
const throughputSeconds = Number(process.env.BENCH_THROUGHPUT_SECONDS ?? 5);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
/**
 * Latency rounds, each local stages then the service on each store, alternated: a start's p99 swings
 * by hundreds of ms from one measure to the next on a 2-core machine (the local stages' own included),
 * so the verdict is on the median of the rounds' added p99, every round printed.
 */
const latencyRounds = Math.max(1, Number(process.env.BENCH_LATENCY_ROUNDS ?? 3));
/**
 * Seconds of the same load each service instance of the latency part serves first, on runs of its own
 * that it then judges, before the measured runs are created: a service is measured as it serves once
 * it has been running, not in the seconds after its start, while its database thread's WebAssembly is
 * still being compiled to faster code (on the embedded store, about a second of CPU on other threads
 * in the first 20 s). The local stages' code runs in this process's own thread, compiled since the
 * first round. 0 measures each instance from its start.
 */
const warmSeconds = Number(process.env.BENCH_WARM_SECONDS ?? 10);
const parts = process.env.BENCH_PARTS ?? 'throughput,cost,latency';
const targets = { ratio: 0.5, addedP99Ms: 5 };

/** `count` local stages of `partner-conformance client` on the default certification plan. */
async function localStages(count) {
  const stages = await Promise.all(
    Array.from({ length: count }, () =>
      startStage({ plan: certificationPlan, tokenDelayMs: 0, apiDelayMs: 0 }),
    ),
  );
  return {
    envs: stages.map((stage) => ({
      tokenUrl: stage.tokenUrl,
      baseUrl: stage.baseUrl,
      clientId: stage.client.clientId,
      clientSecret: stage.client.clientSecret,
    })),
    exchanges: async () => stages.map((stage) => stage.exchangeCount()),
    close: () => Promise.all(stages.map((stage) => stage.close())),
  };
}

/**
 * The database with its statements counted (each query, each statement in a transaction, each
 * transaction's BEGIN and COMMIT): the round trips the service makes.
 */
function counted(db) {
  const counts = { statements: 0, transactions: 0 };
  const queryable = (target) => ({
    query: (text, params) => {
      counts.statements += 1;
      return target.query(text, params);
    },
  });
  return {
    counts,
    db: Object.assign(Object.create(db), {
      query: (text, params) => {
        counts.statements += 1;
        return db.query(text, params);
      },
      queryUnflushed: (text, params) => {
        counts.statements += 1;
        return db.queryUnflushed(text, params);
      },
      transaction: (work) => {
        counts.transactions += 1;
        counts.statements += 2;
        return db.transaction((tx) => work(queryable(tx)));
      },
      close: () => db.close(),
    }),
  };
}

/** The options every instance of the bench starts with (`db` and `signingKey` aside). */
const serviceOptions = (maxRuns) => ({
  port: 0,
  tokenDelayMs: 0,
  apiDelayMs: 0,
  limits: { maxOpenRunsPerPartner: maxRuns, maxRunsPerHour: 10_000 },
  // One partner makes every run here: its creations, finishes and reads are not the load measured.
  fairness: { apiConcurrency: 10_000, apiRequestsPerSecond: 100_000, createConcurrency: 10_000 },
  // BENCH_JOURNAL_FILE=0: on the embedded store, each call waits for its statement (the journal file off).
  ...(process.env.BENCH_JOURNAL_FILE === '0' && { journalFile: false }),
  // BENCH_LISTEN_BACKLOG: the listen backlog (Node's default was 511 before it was the service's 4096).
  ...(process.env.BENCH_LISTEN_BACKLOG && { listenBacklog: Number(process.env.BENCH_LISTEN_BACKLOG) }),
  // BENCH_LISTEN_SOCKETS: handles listening on the port (the service's default 4).
  ...(process.env.BENCH_LISTEN_SOCKETS && { listenSockets: Number(process.env.BENCH_LISTEN_SOCKETS) }),
  log: () => {},
});

/**
 * Another instance of `postgres-N`, in a process of its own (this file, run with BENCH_INSTANCE_OF, the
 * database's URL, and BENCH_INSTANCE_DIR, the first instance's directory and signing key), as separate
 * machines or containers would run it: its own thread serving calls. Sends {url} once listening, answers
 * 'counts' with its statements (see `counted`), 'stop' stops it.
 */
async function serveInstance() {
  const dir = process.env.BENCH_INSTANCE_DIR;
  const { db, counts } = counted(
    await openDatabase({
      databaseUrl: process.env.BENCH_INSTANCE_OF,
      dataDir: join(dir, 'data'),
      serving: true,
    }),
  );
  const signingKey = await loadSigningKey({ dataDir: dir, warn: () => {} });
  const running = await startService({
    db,
    signingKey,
    ...serviceOptions(Number(process.env.BENCH_INSTANCE_RUNS)),
  });
  process.on('message', async (message) => {
    if (message === 'counts') process.send({ counts: { ...counts } });
    if (message === 'stop') {
      await running.close();
      await db.close();
      process.exit(0);
    }
  });
  process.send({ url: running.url });
}

/** Starts another instance of `postgres-N` (see `serveInstance`): its origin, its statements, stop. */
async function startInstance(databaseUrl, dir, maxRuns) {
  const child = spawn(process.execPath, [new URL(import.meta.url).pathname], {
    env: {
      ...process.env,
      BENCH_INSTANCE_OF: databaseUrl,
      BENCH_INSTANCE_DIR: dir,
      BENCH_INSTANCE_RUNS: String(maxRuns),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const reply = (key) =>
    new Promise((resolve, reject) => {
      const onMessage = (message) => {
        if (message?.[key] === undefined) return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(message[key]);
      };
      const onExit = (code) => reject(new Error(`a bench instance exited (${code}) before answering ${key}`));
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  const url = await reply('url');
  return {
    origin: new URL(url).origin,
    counts: () => {
      child.send('counts');
      return reply('counts');
    },
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', resolve);
        child.send('stop');
      }),
  };
}

/**
 * One service instance on a store of `stores` (`undefined`: PGlite; `postgres`: a fresh PostgreSQL
 * database; `postgres-journal`: the same, served by this instance alone with a journal directory;
 * `postgres-N`: N instances sharing a fresh PostgreSQL database, this one and N − 1 in processes of their
 * own, each run's calls sent to each in turn, as a load balancer without affinity sends them, so that
 * every call is served by an instance that did not serve the one before).
 */
async function openService(store, maxRuns) {
  const dir = mkdtempSync(join(tmpdir(), 'pcs-bench-'));
  const count = Number(/^postgres-(\d+)$/.exec(store ?? '')?.[1] ?? 1);
  const databaseUrl = await urlOf(store);
  const { db, counts: own } = counted(
    await openDatabase({
      databaseUrl,
      dataDir: join(dir, 'data'),
      serving: true,
      ...(store === 'postgres-journal' && { journalDir: join(dir, 'journal') }),
    }),
  );
  const signingKey = await loadSigningKey({ dataDir: dir, warn: () => {} });
  const running = await startService({ db, signingKey, ...serviceOptions(maxRuns) });
  const others = [];
  for (let index = 1; index < count; index += 1) others.push(await startInstance(databaseUrl, dir, maxRuns));
  const origins = [new URL(running.url).origin, ...others.map((other) => other.origin)];
  /** The statements of every instance so far (see `counted`). */
  const counts = async () => {
    const all = [{ ...own }, ...(await Promise.all(others.map((other) => other.counts())))];
    return {
      statements: all.reduce((sum, item) => sum + item.statements, 0),
      transactions: all.reduce((sum, item) => sum + item.transactions, 0),
    };
  };
  const { apiKey } = await addPartner(db, 'Bench');
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  return {
    counts,
    /** The instances serving (1 but for `postgres-N`), and the store's name. */
    instances: count,
    store,
    /** The PostgreSQL database it serves (undefined on PGlite). */
    databaseUrl,
    /** Handles listening on the port (see `listenSockets`). */
    sockets: running.listeningSockets,
    port: Number(new URL(running.url).port),
    /**
     * With BENCH_TRACE=1: counts the connections the service accepts, turn by turn of its event loop
     * (the connections given in one poll phase share the check phase's setImmediate), for `ms`.
     */
    acceptsByTurn(ms) {
      const turns = []; // [time, accepted]
      let current;
      const onConnection = () => {
        if (current === undefined) {
          current = [performance.now(), 0];
          turns.push(current);
          setImmediate(() => {
            current = undefined;
          });
        }
        current[1] += 1;
      };
      running.server.prependListener('connection', onConnection);
      const timer = setTimeout(() => running.server.off('connection', onConnection), ms);
      return () => {
        clearTimeout(timer);
        running.server.off('connection', onConnection);
        const counts = turns.map(([, count]) => count);
        const gaps = turns.slice(1).map(([at], index) => at - turns[index][0]);
        const busy = gaps.filter((gap) => gap < 1000).sort((a, b) => a - b);
        return {
          accepted: counts.reduce((sum, count) => sum + count, 0),
          turns: turns.length,
          maxPerTurn: Math.max(0, ...counts),
          meanPerTurn: counts.length ? counts.reduce((sum, count) => sum + count, 0) / counts.length : 0,
          gapP50: quantile(busy, 0.5) ?? 0,
          gapMax: busy.at(-1) ?? 0,
        };
      };
    },
    /** `count` certification runs, their stages open. */
    async create(count) {
      const created = [];
      for (let index = 0; index < count; index += 1) {
        const response = await fetch(`${running.url}/api/runs`, {
          method: 'POST',
          headers,
          body: '{"certify":true}',
        });
        const run = await response.json();
        if (response.status !== 201)
          throw new Error(`creating a run: ${response.status} ${JSON.stringify(run)}`);
        // With several instances, the run's calls go to each in turn (bench/load.mjs).
        created.push(count > 1 ? { ...run, origins } : run);
      }
      // Each run's stage opens on its creation, in the background (its key imported, its mock started).
      await new Promise((resolve) => setTimeout(resolve, 1000));
      return created;
    },
    /** Finishes `created`: the exchanges each session holds, and the time each judging took. */
    async finish(created) {
      const judging = [];
      const exchanges = [];
      for (const run of created) {
        const started = performance.now();
        await (
          await fetch(`${running.url}/api/runs/${run.id}/finish`, { method: 'POST', headers, body: '{}' })
        ).arrayBuffer();
        judging.push(performance.now() - started);
        const session = await (await fetch(`${running.url}/api/runs/${run.id}/session`, { headers })).json();
        exchanges.push(session.exchanges.length);
      }
      return { judging: judging.sort((a, b) => a - b), exchanges };
    },
    async close() {
      for (const other of others) await other.stop();
      await running.close();
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// Another instance of `postgres-N` (see `serveInstance`): it serves until told to stop, and measures nothing.
if (process.env.BENCH_INSTANCE_OF) {
  await serveInstance();
  await new Promise(() => {});
}
const storeNames = (process.env.BENCH_STORES ?? 'embedded,postgres,postgres-journal').split(',');
const stores = [];
const known = {
  embedded: 'embedded (PGlite)',
  postgres: 'PostgreSQL',
  'postgres-journal': 'PostgreSQL, one instance with a journal',
};
for (const name of storeNames) {
  const shared = /^postgres-([2-9])$/.exec(name);
  if (shared) known[name] = `PostgreSQL shared by ${shared[1]} instances, calls alternating`;
  if (!known[name])
    throw new Error(
      `BENCH_STORES takes ${Object.keys(known).join(', ')} or postgres-N (N instances sharing one PostgreSQL, 2 to 9) (a list), not ${JSON.stringify(name)}`,
    );
}
if (storeNames.includes('embedded')) stores.push([known.embedded, undefined]);
let postgres;
const postgresStores = storeNames.filter((name) => name.startsWith('postgres'));
if (postgresStores.length > 0 && postgresBin()) {
  postgres = await startPostgres({ durable: true });
  for (const name of postgresStores) stores.push([known[name], name]);
  // What a commit waits for on this cluster (its defaults, fsync on): say it, so that a reader can
  // compare with a production server's (a replica in synchronous_standby_names, a slower disk).
  const client = new pg.Client({ connectionString: postgres.url });
  await client.connect();
  const { rows } = await client.query(
    `SELECT name, setting FROM pg_settings WHERE name IN
       ('fsync', 'synchronous_commit', 'wal_sync_method', 'commit_delay', 'synchronous_standby_names', 'full_page_writes')
     ORDER BY name`,
  );
  await client.end();
  console.log(
    `PostgreSQL (throwaway cluster, its data under ${tmpdir()}): ${rows.map((row) => `${row.name}=${row.setting || "''"}`).join(', ')}`,
  );
} else if (postgresStores.length > 0)
  console.log('PostgreSQL: not installed (apt-get install postgresql); measured on PGlite only');
console.log(`stores: ${stores.map(([name]) => name).join('; ')} (BENCH_STORES=${storeNames.join(',')})`);
let database = 0;
/** A fresh database for each measure, so that none starts with another's rows. */
const urlOf = async (store) => {
  if (!store) return undefined;
  database += 1;
  return postgres.database(`bench${database}`);
};

const verdicts = [];
const verdict = (ok, what) => {
  const line = `${ok ? 'PASS' : 'FAIL'} ${what}`;
  verdicts.push(line);
  console.log(line);
};

console.log(
  `default certification plan (${certificationPlan.id}: every scenario, ${certificationPlan.ttlSeconds}-s tokens first), stage delays 0; load average ${load()}`,
);

if (parts.includes('throughput')) {
  // Rounds alternate the local stage and the service on each store, each on a fresh run, so that the
  // machine's other work weighs on both alike; the ratio is of the medians.
  const services = [];
  for (const [name, store] of stores) services.push([name, await openService(store, 100)]);
  for (const inFlight of inFlights) {
    const input = { mode: 'throughput', seconds: throughputSeconds, inFlight };
    const measured = { local: [], ...Object.fromEntries(services.map(([name]) => [name, []])) };
    for (let round = 0; round < rounds; round += 1) {
      const local = await localStages(1);
      measured.local.push((await journeys({ ...input, runs: local.envs })).perSecond);
      await local.close();
      for (const [name, service] of services) {
        const created = await service.create(1);
        measured[name].push((await journeys({ ...input, runs: created })).perSecond);
        await service.finish(created);
      }
    }
    const baseline = median(measured.local);
    const list = (values) => values.map((value) => value.toFixed(0)).join(', ');
    console.log(
      `throughput, ${inFlight} in flight: local stage ${baseline.toFixed(0)} calls/s (median of ${list(measured.local)})`,
    );
    for (const [name] of services) {
      const ratio = median(measured[name]) / baseline;
      console.log(
        `throughput, ${inFlight} in flight: service, ${name}: ${median(measured[name]).toFixed(0)} calls/s (median of ${list(measured[name])}), ×${ratio.toFixed(2)} of the local stage; load average ${load()}`,
      );
      verdict(
        ratio >= targets.ratio,
        `throughput ${name}, ${inFlight} in flight: ×${ratio.toFixed(2)} (target ≥ ${targets.ratio})`,
      );
    }
    // Several instances on one PostgreSQL against one: what the second instance adds.
    const one = services.find(([, service]) => service.store === 'postgres')?.[0];
    for (const [name, service] of services)
      if (one && service.instances > 1)
        console.log(
          `throughput, ${inFlight} in flight: ${name} ×${(median(measured[name]) / median(measured[one])).toFixed(2)} of one instance (${one}); load average ${load()}`,
        );
  }
  for (const [, service] of services) await service.close();
}

/**
 * BENCH_TRACE=1: the slowest call of each 500-ms window of the first BENCH_TRACE_SECONDS (5) from the
 * start, local stages against the service, so that where the p99 comes from shows.
 */
const traceSeconds = Number(process.env.BENCH_TRACE_SECONDS ?? 5);
const tracing = process.env.BENCH_TRACE === '1';
function worstByWindow(all) {
  return bySlot(all, 500, traceSeconds).map((slot) => (slot.calls > 0 ? slot.max : undefined));
}

/** The service's grouped statements so far, by batch: statements, items, seconds spent, seconds waited. */
async function batches() {
  const metrics = await metricsRegistry.getMetricsAsJSON();
  const sums = {};
  for (const [metric, field] of [
    ['certification_db_batch_size', 'items'],
    ['certification_db_batch_duration_seconds', 'seconds'],
    ['certification_db_batch_wait_seconds', 'waited'],
  ])
    for (const value of metrics.find((item) => item.name === metric)?.values ?? []) {
      const kind = value.metricName.slice(metric.length);
      if (kind !== '_sum' && kind !== '_count') continue;
      sums[value.labels.batch] ??= { statements: 0, items: 0, seconds: 0, waited: 0 };
      const entry = sums[value.labels.batch];
      if (kind === '_sum') entry[field] += value.value;
      else if (field === 'items') entry.statements += value.value;
    }
  return sums;
}

/** What each batch did between two `batches()`: statements, items per statement, mean time and wait. */
function batchLine(before, after) {
  return Object.entries(after)
    .map(([name, now]) => {
      const was = before[name] ?? { statements: 0, items: 0, seconds: 0, waited: 0 };
      const statements = now.statements - was.statements;
      const items = now.items - was.items;
      if (statements === 0) return undefined;
      return `${name} ${statements} statements, ${(items / statements).toFixed(1)} items each, ${ms((1000 * (now.seconds - was.seconds)) / statements)} each, items waited ${ms((1000 * (now.waited - was.waited)) / Math.max(1, items))} on average`;
    })
    .filter(Boolean)
    .join('; ');
}

/**
 * With BENCH_TRACE=1 (Linux): the service's accept queue, sampled every 5 ms by a process of its own
 * (/proc/net/tcp: a listening socket's rx_queue is the connections the kernel completed and the
 * service has not yet accepted), and the system's listen overflows and drops (SYNs lost, resent by
 * clients 1, 3, 7 s later) over the measure. Stop it for: the queue's maximum, the connection·seconds
 * spent in it (the total time connections waited to be accepted), and when it was last non-empty.
 */
function sampleAcceptQueue(port) {
  const portHex = port.toString(16).toUpperCase().padStart(4, '0');
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const { readFileSync } = require('node:fs');
       const netstat = () => { const lines = readFileSync('/proc/net/netstat', 'utf8').split('\\n').filter((l) => l.startsWith('TcpExt:'));
         const [names, values] = lines.map((l) => l.split(' ')); const out = {};
         for (const name of ['ListenOverflows', 'ListenDrops']) out[name] = Number(values[names.indexOf(name)]); return out; };
       const before = netstat();
       const t0 = performance.now();
       let max = 0, area = 0, last = -1, previous = t0, samples = 0;
       const sample = () => {
         let queued = 0;
         for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\\n')) {
           const f = line.trim().split(/\\s+/);
           if (f[3] === '0A' && f[1] && f[1].endsWith(':${portHex}')) queued += parseInt(f[4].split(':')[1], 16);
         }
         const now = performance.now();
         area += queued * (now - previous) / 1000; previous = now; samples += 1;
         if (queued > max) max = queued;
         if (queued > 0) last = now - t0;
       };
       const timer = setInterval(sample, 5);
       process.stdin.resume();
       process.stdin.on('end', () => { clearInterval(timer); const after = netstat();
         process.stdout.write(JSON.stringify({ max, connectionSeconds: area, lastQueuedMs: last, samples,
           listenOverflows: after.ListenOverflows - before.ListenOverflows, listenDrops: after.ListenDrops - before.ListenDrops })); });`,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const output = text(child.stdout);
  return async () => {
    child.stdin.end();
    return JSON.parse(await output);
  };
}

/**
 * With BENCH_TRACE=1 on PostgreSQL: what the service's connections are doing, sampled every 5 ms while
 * the load runs (pg_stat_activity): how often each is running, idle, or waiting and for what (a row
 * lock held by another statement, the disk, …). Stop it for the counts.
 */
function sampleActivity(url) {
  const client = new pg.Client({ connectionString: url });
  const counts = {};
  let stopped = false;
  const done = (async () => {
    await client.connect();
    while (!stopped) {
      const rows = await client.query(
        `SELECT state, wait_event_type, wait_event FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
      );
      for (const row of rows.rows) {
        const key =
          row.state === 'active'
            ? row.wait_event
              ? `${row.wait_event_type}:${row.wait_event}`
              : 'running'
            : row.state;
        counts[key] = (counts[key] ?? 0) + 1;
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await client.end();
  })();
  return async () => {
    stopped = true;
    await done;
    return Object.entries(counts)
      .sort((a, b) => b[1] - a[1])
      .map(([key, value]) => `${key} ${value}`)
      .join(', ');
  };
}

if (parts.includes('cost')) {
  // What one request costs the server, beyond the load: requests sent one at a time by the load process,
  // this process's HTTP-thread active time (event-loop utilisation) and CPU (every thread: the embedded
  // database's and libuv's pool included) over them, a local stage against a run of the service.
  // Rounds alternate them; the first round is a warm-up and is printed, not counted.
  const count = Number(process.env.BENCH_COST_REQUESTS ?? 1500);
  const costRounds = Math.max(2, Number(process.env.BENCH_COST_ROUNDS ?? 4));
  const services = [];
  for (const [name, store] of stores) services.push([name, await openService(store, 100)]);
  const measure = async (runs, what) => {
    const elu = performance.eventLoopUtilization();
    const cpu = process.cpuUsage();
    const { statuses } = await journeys({ mode: 'sequence', what, count, runs });
    const used = process.cpuUsage(cpu);
    return {
      active: (performance.eventLoopUtilization(elu).active * 1000) / count,
      cpu: (used.user + used.system) / count,
      statuses,
    };
  };
  const names = ['local stage', ...services.map(([name]) => name)];
  /** By what ("token", "call") and by side: the per-request costs of the counted rounds. */
  const costs = Object.fromEntries(
    ['token', 'call'].map((what) => [what, Object.fromEntries(names.map((name) => [name, []]))]),
  );
  const us = (value) => `${value.toFixed(0)} µs`;
  const labels = { token: ['token request', 'a token request'], call: ['API call', 'an API call'] };
  /** The medians of a side's counted rounds. */
  const medians = (measured) => ({
    active: median(measured.map((cost) => cost.active)),
    cpu: median(measured.map((cost) => cost.cpu)),
  });
  for (let round = 1; round <= costRounds; round += 1) {
    const sides = [];
    const local = await localStages(1);
    sides.push(['local stage', local.envs, () => local.close()]);
    for (const [name, service] of services) {
      const created = await service.create(1);
      sides.push([name, created, () => service.finish(created)]);
    }
    for (const [name, runs, done] of sides) {
      for (const what of ['token', 'call']) {
        const cost = await measure(runs, what);
        if (round > 1) costs[what][name].push(cost);
        console.log(
          `cost, round ${round} of ${costRounds}${round === 1 ? ' (warm-up, not counted)' : ''}, ${labels[what][0]}, ${name}: HTTP thread ${us(cost.active)}, CPU ${us(cost.cpu)} (${JSON.stringify(cost.statuses)})`,
        );
      }
      await done();
    }
  }
  for (const what of ['token', 'call']) {
    const local = medians(costs[what]['local stage']);
    for (const [name] of services) {
      const { active, cpu } = medians(costs[what][name]);
      console.log(
        `cost of ${labels[what][1]}, medians of ${costRounds - 1} rounds: service, ${name}: HTTP thread ${us(active)} against ${us(local.active)} on the local stage (+${us(active - local.active)}, ×${(active / local.active).toFixed(2)}); CPU ${us(cpu)} against ${us(local.cpu)} (×${(cpu / local.cpu).toFixed(2)})`,
      );
    }
  }
  for (const [, service] of services) await service.close();
}

if (parts.includes('latency')) {
  for (const start of (process.env.BENCH_STARTS ?? 'together,spread').split(',')) {
    /** Each store's added p99 and exchanges lost, round by round. */
    const byStore = new Map(stores.map(([name]) => [name, { addedP99: [], addedQuietP99: [], lost: 0 }]));
    for (let round = 1; round <= latencyRounds; round += 1) {
      const of = latencyRounds > 1 ? ` (round ${round} of ${latencyRounds})` : '';
      const input = { mode: 'open', seconds, rate, start, trace: tracing };
      const local = await localStages(runs);
      const localThreads = threadTimes();
      const localResults = await journeys({ ...input, runs: local.envs });
      const baseline = summary(localResults);
      const localCpu = cpuPerCall(localThreads, baseline.calls + baseline.tokens);
      await local.close();
      console.log(
        `latency, ${runs} runs × ${rate} calls/s starting ${start}${of}: local stages ${baseline.calls} calls, p50 ${ms(baseline.p50)}, p99 ${ms(baseline.p99)} (the ${baseline.quiet} calls no token request overlapped: p99 ${ms(baseline.quietP99)}); ${baseline.tokens} token requests, p50 ${ms(baseline.tokenP50)}, p99 ${ms(baseline.tokenP99)} (not 200: ${JSON.stringify(baseline.statuses)})${localCpu ? `; ${cpuLine(localCpu)}` : ''}`,
      );
      for (const [name, store] of stores) {
        const service = await openService(store, runs);
        if (warmSeconds > 0) {
          const warming = await service.create(runs);
          await journeys({ ...input, seconds: warmSeconds, trace: false, runs: warming });
          await service.finish(warming);
        }
        const created = await service.create(runs);
        const before = await service.counts();
        const batchesBefore = await batches();
        const activity = tracing && service.databaseUrl ? sampleActivity(service.databaseUrl) : undefined;
        const acceptQueue =
          tracing && process.platform === 'linux' ? sampleAcceptQueue(service.port) : undefined;
        const accepts = tracing ? service.acceptsByTurn(traceSeconds * 1000 + 1000) : undefined;
        const serviceThreads = threadTimes();
        const results = await journeys({ ...input, runs: created });
        const activitySeen = await activity?.();
        const queueSeen = await acceptQueue?.();
        const acceptsSeen = accepts?.();
        const after = await service.counts();
        const sent = {
          statements: after.statements - before.statements,
          transactions: after.transactions - before.transactions,
        };
        const { judging, exchanges } = await service.finish(created);
        await service.close();
        const result = summary(results);
        const serviceCpu = cpuPerCall(serviceThreads, result.calls + result.tokens);
        const lost = results.reduce(
          (sum, item, index) => sum + Math.max(0, item.answered - exchanges[index]),
          0,
        );
        const added = { p50: result.p50 - baseline.p50, p99: result.p99 - baseline.p99 };
        if (tracing) {
          console.log(`grouped statements, ${name}: ${batchLine(batchesBefore, await batches())}`);
          if (activitySeen) console.log(`connections sampled every 5 ms, ${name}: ${activitySeen}`);
          if (acceptsSeen)
            console.log(
              `connections accepted by the service ${name} in the first ${traceSeconds + 1} s: ${acceptsSeen.accepted} in ${acceptsSeen.turns} turns of its event loop, at most ${acceptsSeen.maxPerTurn} a turn (${acceptsSeen.meanPerTurn.toFixed(2)} on average); between two turns that accepted: p50 ${ms(acceptsSeen.gapP50)}, max ${ms(acceptsSeen.gapMax)}`,
            );
          if (queueSeen)
            console.log(
              `accept queue of the service ${name} (${service.sockets} listening handles), sampled every 5 ms: at most ${queueSeen.max} connections waiting, ${queueSeen.connectionSeconds.toFixed(2)} connection·s waited in all, last waiting at ${(queueSeen.lastQueuedMs / 1000).toFixed(2)} s; the system's listen overflows ${queueSeen.listenOverflows}, drops ${queueSeen.listenDrops}`,
            );
          const [localWorst, serviceWorst] = [worstByWindow(localResults), worstByWindow(results)];
          console.log(
            `slowest call per 500 ms from the start, local stages / service ${name}: ${serviceWorst.map((value, index) => `${index * 0.5}s ${localWorst[index] ?? '-'}/${value ?? '-'}`).join(', ')}`,
          );
        }
        console.log(
          `latency, ${runs} runs starting ${start}${of}: service, ${name} (${service.sockets} listening handles): ${result.calls} calls, p50 ${ms(result.p50)} (${signed(added.p50)}), p99 ${ms(result.p99)} (${signed(added.p99)}), the ${result.quiet} calls no token request overlapped p99 ${ms(result.quietP99)} (${signed(result.quietP99 - baseline.quietP99)}); tokens p50 ${ms(result.tokenP50)} (${signed(result.tokenP50 - baseline.tokenP50)}), p99 ${ms(result.tokenP99)} (${signed(result.tokenP99 - baseline.tokenP99)}); exchanges lost ${lost}; judging a run p50 ${ms(quantile(judging, 0.5))}, max ${ms(judging.at(-1))}; statements per call ${(sent.statements / (result.calls + result.tokens)).toFixed(2)} (${sent.transactions} transactions) (not 200: ${JSON.stringify(result.statuses)})${serviceCpu ? `; ${cpuLine(serviceCpu)}` : ''}; load average ${load()}`,
        );
        byStore.get(name).addedP99.push(added.p99);
        byStore.get(name).addedQuietP99.push(result.quietP99 - baseline.quietP99);
        byStore.get(name).lost += lost;
      }
    }
    for (const [name, { addedP99, addedQuietP99, lost }] of byStore) {
      const rounds = `${addedP99.length} round(s): ${addedP99.map(signed).join(', ')}; ${addedP99.filter((value) => value < targets.addedP99Ms).length} under the target`;
      // Not the target: what the p99 is made of. The slowest 1% of calls are mostly those that shared
      // the server with token requests (each run's first call waits for its first token; renewals of
      // runs started together come together).
      console.log(
        `latency ${name}, ${runs} runs starting ${start}: p99 added to the calls no token request overlapped ${signed(median(addedQuietP99))}, the median of ${addedQuietP99.map(signed).join(', ')}`,
      );
      if (start === 'together')
        verdict(
          median(addedP99) < targets.addedP99Ms,
          `latency ${name}, ${runs} runs starting together: p99 added ${signed(median(addedP99))}, the median of ${rounds} (target < ${targets.addedP99Ms} ms)`,
        );
      else console.log(`latency ${name}, ${runs} runs starting ${start}: p99 added, the median of ${rounds}`);
      verdict(
        lost === 0,
        `exchanges lost ${name}, runs starting ${start}: ${lost} in ${addedP99.length} round(s) (target 0)`,
      );
    }
  }
}

await postgres?.stop();
console.log(`\n${verdicts.join('\n')}\nload average ${load()}`);
