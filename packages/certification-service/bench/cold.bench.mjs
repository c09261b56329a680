// The service as an outsider meets it: `partner-certification-service serve` started fresh in a process
// of its own (no warm-up by the bench: only serve's own start-up warm-up, before `/readyz` says ready;
// BENCH_SERVE_ARGS=--no-warm-up measures without it), then BENCH_PARTNERS (10) partners × BENCH_RUNS_PER_PARTNER (5)
// certification runs created at once as soon as `/readyz` says ready, each run's journey 10 calls/s, open
// loop, starting together for BENCH_SECONDS (20) — a Monday-morning rush on a new instance. Then, on the
// same instance, as many new runs the same way: the instance warm. The baseline is as many local stages of
// `partner-conformance client` started in a fresh process of their own (cold), then restarted in it
// (warm), measured in the same round. Both sides keep the stages' default delays (100 ms a token, 20 ms a
// call), the defaults of `serve`. BENCH_COLD_ROUNDS (3) rounds, each local stages then each store of
// BENCH_STORES (embedded,postgres); prints every round (with each grouped statement's items, mean queue
// wait and mean time over each journey, and what the service added to its stages' token and API answers
// beyond their delays, from the instance's metrics), the ranges, CPU per call of the
// service's process (its HTTP thread and its other threads) against the local process's, and PASS/FAIL of the target: added
// p99 under 5 ms, cold, on the median of the rounds. BENCH_SERVE_NODE_ARGS gives the service's process Node
// flags (to profile it: `--cpu-prof --cpu-prof-dir=DIR`), BENCH_SERVE_ARGS more flags of `serve` (e.g.
// `--no-warm-up`), BENCH_SERVE_LOG a path prefix to keep each instance's request log, BENCH_EVENT_LOOP=1
// (with BENCH_SLOTS=1) each process's HTTP thread by slot (event-loop use, longest delay, CPU, the
// machine's idle share), BENCH_PG_WAITS=N PostgreSQL's backends' waits by statement over the cold
// journeys' first N s, BENCH_PG_SOCKET=1 the service reaching PostgreSQL through its Unix socket rather than
// TCP on the loopback. Build first (`pnpm build`).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { text } from 'node:stream/consumers';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { postgresBin, startPostgres } from '../test/support/postgres.mjs';
import {
  bySlot,
  cpuLine,
  cpuPerCall,
  journeys,
  load,
  median,
  ms,
  signed,
  summary,
  threadTimes,
} from './measure.mjs';

const partners = Number(process.env.BENCH_PARTNERS ?? 10);
const runsPerPartner = Number(process.env.BENCH_RUNS_PER_PARTNER ?? 5);
const seconds = Number(process.env.BENCH_SECONDS ?? 20);
const rounds = Math.max(1, Number(process.env.BENCH_COLD_ROUNDS ?? 3));
const storeNames = (process.env.BENCH_STORES ?? 'embedded,postgres').split(',');
const target = 5;
const runs = partners * runsPerPartner;
/** BENCH_SERVE_CLI: another build's dist/cli.js to measure (e.g. a copy of the previous commit's, to compare). */
const cli = process.env.BENCH_SERVE_CLI ?? fileURLToPath(new URL('../dist/cli.js', import.meta.url));
/**
 * BENCH_SLOTS=1: the client's latencies by 200-ms slot of each journey's first BENCH_SLOT_SECONDS (3),
 * local stages against the service, cold and warm: where in the journey the added p99 comes from.
 */
const slots = process.env.BENCH_SLOTS === '1';
const slotSeconds = Number(process.env.BENCH_SLOT_SECONDS ?? 3);
const input = { mode: 'open', seconds, rate: 10, start: 'together', trace: slots };
/** BENCH_SERVE_NODE_ARGS: Node's flags for the service's process, e.g. `--cpu-prof --cpu-prof-dir=DIR`. */
const serveNodeArgs = (process.env.BENCH_SERVE_NODE_ARGS ?? '').split(' ').filter(Boolean);
/** BENCH_LOCAL_NODE_ARGS: Node's flags for the local stages' process (to profile it beside the service). */
const localNodeArgs = (process.env.BENCH_LOCAL_NODE_ARGS ?? '').split(' ').filter(Boolean);
/**
 * BENCH_SERVE_LOG: a path prefix; each instance's log lines (a JSON line a request, with its stage kind,
 * status, run and duration) are kept in `PREFIX-STORE-ROUND.jsonl`, to see which calls were slow.
 */
const serveLog = process.env.BENCH_SERVE_LOG;
/**
 * BENCH_PG_WAITS=N (PostgreSQL): samples the instance's backends in `pg_stat_activity` every 10 ms over
 * the cold journeys' first N seconds and prints, by statement, how often each was seen waiting on what
 * (`Lock:transactionid`, `IO:WalSync`, …; `CPU` when not waiting): what a statement's time is made of.
 */
const pgWaits = Number(process.env.BENCH_PG_WAITS ?? 0);
/**
 * BENCH_EVENT_LOOP=1: the service's HTTP thread by 200-ms slot of the cold journeys' first
 * BENCH_SLOT_SECONDS (3): its event loop's use and longest delay, the CPU it was given, and the machine's
 * idle share (bench/event-loop.mjs, loaded into the service's process): whether a slow slot waited for
 * the database (use low) or for a core (use 1, CPU under the wall time, the machine not idle).
 */
const eventLoop = process.env.BENCH_EVENT_LOOP === '1';
/**
 * BENCH_PG_SOCKET=1: the service reaches PostgreSQL through its Unix socket. On the loopback, a TCP write
 * also runs the receiving side's network stack in the writer's system call, so each statement costs the
 * service's thread more than it would with PostgreSQL on another machine.
 */
const pgSocket = process.env.BENCH_PG_SOCKET === '1';
if (eventLoop && !slots)
  throw new Error("BENCH_EVENT_LOOP=1 needs BENCH_SLOTS=1 (its slots are the journeys')");
/** BENCH_SERVE_ARGS: more flags of `serve`, e.g. `--no-warm-up`. */
const serveArgs = (process.env.BENCH_SERVE_ARGS ?? '').split(' ').filter(Boolean);

for (const name of storeNames)
  if (name !== 'embedded' && name !== 'postgres')
    throw new Error(`BENCH_STORES takes embedded, postgres (a list), not ${JSON.stringify(name)}`);
const postgres =
  storeNames.includes('postgres') && postgresBin() ? await startPostgres({ durable: true }) : undefined;
if (storeNames.includes('postgres') && !postgres)
  console.log('PostgreSQL: not installed (apt-get install postgresql); measured on PGlite only');
const stores = storeNames.filter((name) => name === 'embedded' || postgres);

/**
 * BENCH_EVENT_LOOP: what a process needs to record its HTTP thread (bench/event-loop.mjs) into a file of
 * `dir`, and its rows once it has exited; nothing without the option.
 */
function eventLoopProbe(dir) {
  if (!eventLoop) return { nodeArgs: [], env: {}, read: () => [] };
  const file = join(dir, 'event-loop.json');
  return {
    nodeArgs: ['--import', fileURLToPath(new URL('./event-loop.mjs', import.meta.url))],
    env: { BENCH_EVENT_LOOP_FILE: file },
    read: () => JSON.parse(readFileSync(file, 'utf8')),
  };
}

/** Runs the command-line tool to its end; its stdout. */
async function command(args, env) {
  const child = spawn(process.execPath, [cli, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const [out, err, [code]] = await Promise.all([text(child.stdout), text(child.stderr), once(child, 'exit')]);
  if (code !== 0) throw new Error(`${args.slice(0, 2).join(' ')} exited ${code}: ${err.slice(0, 500)}`);
  return out;
}

/** A fresh instance of `serve` on `store` with `partners` partners: its process, address and keys. */
async function freshService(store, round) {
  const dir = mkdtempSync(join(tmpdir(), 'pcs-cold-'));
  const name = `cold${round}`;
  const tcpUrl = store === 'postgres' ? await postgres.database(name) : undefined;
  const database = tcpUrl && pgSocket ? postgres.socketUrl(name) : tcpUrl;
  const env = { ...process.env, ...(database && { DATABASE_URL: database }) };
  const probe = eventLoopProbe(dir);
  const keys = [];
  for (let index = 0; index < partners; index += 1)
    keys.push(
      JSON.parse(
        await command(
          ['admin', 'add-partner', '--name', `Bench ${index + 1}`, '--json', '--data-dir', dir],
          env,
        ),
      ).apiKey,
    );
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [
      ...serveNodeArgs,
      ...probe.nodeArgs,
      cli,
      'serve',
      '--port',
      '0',
      '--metrics-port',
      '0',
      '--data-dir',
      dir,
      '--log-format',
      'json',
      ...serveArgs,
    ],
    { env: { ...env, ...probe.env }, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout });
  let url;
  let metricsUrl;
  for await (const line of lines) {
    const event = JSON.parse(line);
    if (event.event === 'service.started') {
      url = event.url;
      metricsUrl = event.metricsUrl;
      break;
    }
  }
  if (!url) throw new Error('serve ended before it said where it listens');
  // Its log lines are read and dropped, or kept in a file of their own (BENCH_SERVE_LOG).
  const kept = serveLog && createWriteStream(`${serveLog}-${store}-${round}.jsonl`);
  lines.on('line', kept ? (line) => kept.write(`${line}\n`) : () => {});
  if (kept) child.once('exit', () => kept.end());
  for (;;) {
    const ready = await fetch(`${url}/readyz`).catch(() => undefined);
    if (ready?.status === 200) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const readyMs = performance.now() - started;
  const call = async (key, path, body) => {
    for (;;) {
      const response = await fetch(`${url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (response.status === 429) {
        await response.arrayBuffer();
        await new Promise((resolve) =>
          setTimeout(resolve, 1000 * Number(response.headers.get('retry-after') ?? 1)),
        );
        continue;
      }
      return response;
    }
  };
  return {
    pid: child.pid,
    readyMs,
    /** The grouped statements' figures and what the service added to its stages' answers, so far. */
    async figures() {
      const metrics = await (await fetch(metricsUrl)).text();
      return { batches: batchFigures(metrics), added: addedFigures(metrics) };
    },
    /** PostgreSQL: the connections opened to this instance's database so far (its server's count). */
    async sessions() {
      if (!database) return undefined;
      const client = new pg.Client({ connectionString: database });
      await client.connect();
      const { rows } = await client.query(
        'SELECT sessions FROM pg_stat_database WHERE datname = current_database()',
      );
      await client.end();
      // This query's own connection is counted once it ends: the count before it.
      return Number(rows[0].sessions);
    },
    /**
     * PostgreSQL: samples this instance's active backends every 10 ms for `seconds`; by statement (its
     * first words), the samples seen on each wait (`CPU` for none), most seen first.
     */
    async waits(seconds) {
      if (!database) return undefined;
      const client = new pg.Client({ connectionString: database });
      await client.connect();
      const seen = new Map();
      let samples = 0;
      const end = performance.now() + 1000 * seconds;
      while (performance.now() < end) {
        const { rows } = await client.query(
          `SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') AS wait, left(regexp_replace(query, '\\s+', ' ', 'g'), 70) AS statement
             FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'`,
        );
        samples += 1;
        for (const row of rows) {
          const key = `${row.statement} | ${row.wait}`;
          seen.set(key, (seen.get(key) ?? 0) + 1);
        }
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await client.end();
      return { samples, seen: [...seen].sort((a, b) => b[1] - a[1]) };
    },
    /** Every partner's runs, created at once (each partner's one after another). */
    async create() {
      const created = await Promise.all(
        keys.map(async (key) => {
          const mine = [];
          for (let index = 0; index < runsPerPartner; index += 1) {
            const response = await call(key, '/api/runs', { certify: true });
            const run = await response.json();
            if (response.status !== 201)
              throw new Error(`creating a run: ${response.status} ${JSON.stringify(run)}`);
            mine.push({ ...run, key });
          }
          return mine;
        }),
      );
      return created.flat();
    },
    async finish(created) {
      await Promise.all(
        keys.map(async (key) => {
          for (const run of created.filter((item) => item.key === key))
            await (await call(key, `/api/runs/${run.id}/finish`, {})).arrayBuffer();
        }),
      );
    },
    /** BENCH_EVENT_LOOP: the service's event-loop rows (bench/event-loop.mjs), once it has exited. */
    eventLoop: [],
    async close() {
      child.kill('SIGTERM');
      await once(child, 'exit');
      this.eventLoop = probe.read();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A grouped statement's figures before its first statement. */
const noFigure = { batches: 0, items: 0, wait: 0, took: 0 };

/**
 * From the service's metrics: by grouped statement (`number`, `record`, …), the statements sent, the
 * items they carried, the seconds the items waited in the queue and the seconds the statements took
 * (sums since the start: two readings give a window).
 */
function batchFigures(metrics) {
  const figures = {};
  const pattern =
    /^certification_db_batch_(size|wait_seconds|duration_seconds)_(sum|count)\{([^}]*)\} (\S+)$/gm;
  for (const [, what, kind, labels, value] of metrics.matchAll(pattern)) {
    const name = /batch="([^"]*)"/.exec(labels)?.[1];
    if (!name || (what === 'duration_seconds' && !labels.includes('outcome="ok"'))) continue;
    figures[name] ??= { ...noFigure };
    const figure = figures[name];
    if (what === 'size' && kind === 'count') figure.batches = Number(value);
    if (what === 'size' && kind === 'sum') figure.items = Number(value);
    if (what === 'wait_seconds' && kind === 'sum') figure.wait = Number(value);
    if (what === 'duration_seconds' && kind === 'sum') figure.took = Number(value);
  }
  return figures;
}

/** What the service added to a stage call kind's answers before its first call. */
const noAdded = { count: 0, sum: 0, within25: 0, within100: 0 };

/**
 * From the service's metrics: by stage call kind (`token`, `api`), what the service added to the calls
 * answered (their time less the stage's delay): count, seconds in all, and how many took over 25 and
 * over 100 ms more (sums since the start, as `batchFigures`).
 */
function addedFigures(metrics) {
  const figures = {};
  const pattern = /^certification_stage_added_latency_seconds_(sum|count|bucket)\{([^}]*)\} (\S+)$/gm;
  for (const [, what, labels, value] of metrics.matchAll(pattern)) {
    const kind = /kind="([^"]*)"/.exec(labels)?.[1];
    if (kind !== 'token' && kind !== 'api') continue;
    figures[kind] ??= { ...noAdded };
    const le = /le="([^"]*)"/.exec(labels)?.[1];
    if (what === 'count') figures[kind].count = Number(value);
    if (what === 'sum') figures[kind].sum = Number(value);
    if (le === '0.025') figures[kind].within25 = Number(value);
    if (le === '0.1') figures[kind].within100 = Number(value);
  }
  return figures;
}

/** What the service added to a window's stage calls, by kind (see `addedFigures`). */
function addedLine(before, after) {
  return ['token', 'api']
    .map((kind) => {
      const was = before[kind] ?? noAdded;
      const now = after[kind];
      const count = now ? now.count - was.count : 0;
      if (!now || count === 0) return undefined;
      const over25 = count - (now.within25 - was.within25);
      const over100 = count - (now.within100 - was.within100);
      return `${kind} ${count} calls, mean ${ms((1000 * (now.sum - was.sum)) / count)}, ${over25} over 25 ms, ${over100} over 100 ms`;
    })
    .filter(Boolean)
    .join('; ');
}

/** The grouped statements of a window (`after` less `before`, batchFigures): items, mean wait and time. */
function batchLine(before, after) {
  return Object.entries(after)
    .map(([name, figure]) => {
      const was = before[name] ?? noFigure;
      const batches = figure.batches - was.batches;
      const items = figure.items - was.items;
      if (batches === 0) return undefined;
      return `${name} ${items} items in ${batches} statements, wait ${ms((1000 * (figure.wait - was.wait)) / items)}, statement ${ms((1000 * (figure.took - was.took)) / batches)} (means)`;
    })
    .filter(Boolean)
    .join('; ');
}

/** Local stages in a fresh process: `restart()` closes the open ones and starts `runs` new. */
function localProcess() {
  const dir = mkdtempSync(join(tmpdir(), 'pcs-local-'));
  const probe = eventLoopProbe(dir);
  const child = spawn(
    process.execPath,
    [...localNodeArgs, ...probe.nodeArgs, fileURLToPath(new URL('./local-stages.mjs', import.meta.url))],
    { env: { ...process.env, ...probe.env }, stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return {
    pid: child.pid,
    async restart() {
      child.stdin.write(`${runs}\n`);
      const { value } = await lines.next();
      return JSON.parse(value).envs;
    },
    /** BENCH_EVENT_LOOP: the process's event-loop rows (bench/event-loop.mjs), once it has exited. */
    eventLoop: [],
    async close() {
      child.stdin.end();
      await once(child, 'exit');
      this.eventLoop = probe.read();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One measure: the journeys on `envs`, the latencies and the CPU per call of process `pid`. */
async function measure(envs, pid) {
  const before = threadTimes(pid);
  const all = await journeys({ ...input, runs: envs });
  const result = summary(all);
  return {
    ...result,
    cpu: cpuPerCall(before, result.calls + result.tokens, pid),
    ...(slots && {
      slots: bySlot(all, 200, slotSeconds),
      startedAtEpoch: Math.min(...all.map((item) => item.startedAtEpoch)),
    }),
  };
}

/** The slots of a service measure against the local stages' (BENCH_SLOTS): p50 and p99 of each, ms. */
const slotLine = (what, result, baseline) =>
  `${what}, by 200-ms slot from the start, p50/p99 service (local): ${result.slots
    .map((slot, index) => {
      const local = baseline.slots[index];
      return `${index * 200}: ${slot.p50.toFixed(0)}/${slot.p99.toFixed(0)} (${local?.p50.toFixed(0)}/${local?.p99.toFixed(0)})`;
    })
    .join(', ')}`;

/**
 * A process's HTTP thread over the cold journeys' first BENCH_SLOT_SECONDS by 200-ms slot from `from`
 * (ms since the epoch; BENCH_EVENT_LOOP): event-loop use, longest delay, CPU given (ms of 200), idle.
 */
function eventLoopLine(what, rows, from) {
  const slotsOf = [];
  for (const row of rows) {
    const index = Math.floor((row.at - from) / 200);
    if (index < 0 || index >= (slotSeconds * 1000) / 200) continue;
    slotsOf[index] ??= [];
    slotsOf[index].push(row);
  }
  const mean = (items, key) => items.reduce((sum, item) => sum + (item[key] ?? 0), 0) / items.length;
  return `${what}, the HTTP thread by 200-ms slot from the journeys' start, use/longest delay ms/CPU ms/machine idle: ${slotsOf
    .map((items, index) =>
      items
        ? `${index * 200}: ${mean(items, 'use').toFixed(2)}/${Math.max(...items.map((item) => item.maxDelayMs)).toFixed(0)}/${(mean(items, 'cpuMs') * items.length).toFixed(0)}/${(100 * mean(items, 'idle')).toFixed(0)}%`
        : undefined,
    )
    .filter(Boolean)
    .join(', ')}`;
}

const line = (what, result, baseline) =>
  `${what}: ${result.calls} calls, p50 ${ms(result.p50)}${baseline ? ` (${signed(result.p50 - baseline.p50)})` : ''}, p99 ${ms(result.p99)}${baseline ? ` (${signed(result.p99 - baseline.p99)})` : ''}; tokens p99 ${ms(result.tokenP99)}; not 200: ${JSON.stringify(result.statuses)}; ${cpuLine(result.cpu)}; 401 by reason: ${JSON.stringify(result.refusals)}`;

console.log(
  `${partners} partners × ${runsPerPartner} runs × 10 calls/s starting together for ${seconds} s, the service started fresh (stores: ${stores.join(', ')}${serveArgs.length ? `; serve ${serveArgs.join(' ')}` : ''}${process.env.BENCH_SERVE_CLI ? `; ${cli}` : ''}); load average ${load()}`,
);
const added = Object.fromEntries(
  stores.flatMap((store) => [
    [`${store} cold`, []],
    [`${store} warm`, []],
  ]),
);
const cpuRatio = Object.fromEntries(stores.map((store) => [store, []]));
for (let round = 1; round <= rounds; round += 1) {
  const local = localProcess();
  const localCold = await measure(await local.restart(), local.pid);
  const localWarm = await measure(await local.restart(), local.pid);
  await local.close();
  console.log(line(`round ${round}, local stages, cold`, localCold));
  if (eventLoop)
    console.log(
      eventLoopLine(`round ${round}, local stages, cold`, local.eventLoop, localCold.startedAtEpoch),
    );
  console.log(line(`round ${round}, local stages, warm`, localWarm));
  for (const store of stores) {
    const service = await freshService(store, round);
    const atReady = await service.sessions();
    const coldRuns = await service.create();
    const atCold = await service.sessions();
    const figuresCold = await service.figures();
    const sampling = pgWaits > 0 ? service.waits(pgWaits) : undefined;
    const cold = await measure(coldRuns, service.pid);
    const waits = await sampling;
    const afterCold = await service.sessions();
    const figuresAfterCold = await service.figures();
    await service.finish(coldRuns);
    const warmRuns = await service.create();
    const atWarm = await service.sessions();
    const figuresWarm = await service.figures();
    const warm = await measure(warmRuns, service.pid);
    const afterWarm = await service.sessions();
    const figuresAfterWarm = await service.figures();
    await service.finish(warmRuns);
    await service.close();
    // Each count includes the bench's own query before it (one connection each).
    if (atReady !== undefined)
      console.log(
        `round ${round}, service ${store}: connections opened to PostgreSQL: ${atReady} by /readyz, ${atCold - atReady - 1} during the cold creations, ${afterCold - atCold - 1} during the cold journeys, ${afterWarm - atWarm - 1} during the warm journeys`,
      );
    console.log(
      line(
        `round ${round}, service ${store}, cold (ready ${(service.readyMs / 1000).toFixed(2)} s after its start)`,
        cold,
        localCold,
      ),
    );
    console.log(`${line(`round ${round}, service ${store}, warm`, warm, localWarm)}; load average ${load()}`);
    console.log(
      `round ${round}, service ${store}, grouped statements, cold: ${batchLine(figuresCold.batches, figuresAfterCold.batches)}`,
    );
    console.log(
      `round ${round}, service ${store}, added by the service to the stage's answers, cold: ${addedLine(figuresCold.added, figuresAfterCold.added)}`,
    );
    console.log(
      `round ${round}, service ${store}, grouped statements, warm: ${batchLine(figuresWarm.batches, figuresAfterWarm.batches)}`,
    );
    console.log(
      `round ${round}, service ${store}, added by the service to the stage's answers, warm: ${addedLine(figuresWarm.added, figuresAfterWarm.added)}`,
    );
    if (eventLoop)
      console.log(
        eventLoopLine(`round ${round}, service ${store}, cold`, service.eventLoop, cold.startedAtEpoch),
      );
    if (waits) {
      console.log(
        `round ${round}, service ${store}, cold, PostgreSQL backends by statement and wait, ${waits.samples} samples of 10 ms over the first ${pgWaits} s:`,
      );
      for (const [what, count] of waits.seen.slice(0, 25)) console.log(`  ${count}\t${what}`);
    }
    if (slots) {
      console.log(slotLine(`round ${round}, service ${store}, cold`, cold, localCold));
      console.log(slotLine(`round ${round}, service ${store}, warm`, warm, localWarm));
    }
    added[`${store} cold`].push(cold.p99 - localCold.p99);
    added[`${store} warm`].push(warm.p99 - localWarm.p99);
    if (cold.cpu && localCold.cpu) cpuRatio[store].push(cold.cpu.http / localCold.cpu.http);
  }
}
await postgres?.stop();
const range = (values) =>
  `${signed(Math.min(...values))} to ${signed(Math.max(...values))}, median ${signed(median(values))}`;
console.log('');
for (const [what, values] of Object.entries(added))
  console.log(
    `${values.length && median(values) < target ? 'PASS' : 'FAIL'} p99 added, ${what}: ${range(values)} over ${values.length} round(s) (target < ${target} ms)`,
  );
for (const [store, ratios] of Object.entries(cpuRatio))
  if (ratios.length)
    console.log(
      `HTTP thread CPU per call, service ${store} cold / local stages cold: ${ratios.map((ratio) => `×${ratio.toFixed(2)}`).join(', ')} (target ≤ ×1.2)`,
    );
console.log(`load average ${load()}`);
