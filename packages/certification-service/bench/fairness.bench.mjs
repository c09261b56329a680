// Fairness: partner A's run creation and token request, measured quiet and while partner B (in a process
// of its own, bench/flood.mjs) floods waves of BENCH_FLOOD concurrent creations (most refused 429, some
// accepted, each accepted run finished and judged). Quiet and flood phases alternate BENCH_FAIR_ROUNDS
// times, so that a shared machine's load drifts over both alike. Prints A's p50/p99 in both, the ratio
// flood/quiet, and PASS or FAIL against the target: p99 within BENCH_FAIR_TARGET (2) × of quiet.
// BENCH_FAIR_ITERATIONS (40) creations by A per phase kind; BENCH_FLOOD (200); BENCH_FLOOD_CALLS (0) API
// calls B makes at each accepted run before finishing it; BENCH_FLOOD_MODE (waves; loop: each of B's
// BENCH_FLOOD senders sends again as soon as answered); BENCH_JUDGING_THREADS (the service's default;
// 0 judges on the HTTP thread); BENCH_STORES=embedded|postgres measures one store only.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { fileURLToPath } from 'node:url';
import {
  addPartner,
  defaultJudgingOptions,
  loadSigningKey,
  openDatabase,
  startService,
} from '../dist/index.js';
import { postgresBin, startPostgres } from '../test/support/postgres.mjs';

const iterations = Number(process.env.BENCH_FAIR_ITERATIONS ?? 40);
const rounds = Math.max(1, Number(process.env.BENCH_FAIR_ROUNDS ?? 2));
const target = Number(process.env.BENCH_FAIR_TARGET ?? 2);
const judgingThreads =
  process.env.BENCH_JUDGING_THREADS === undefined ? undefined : Number(process.env.BENCH_JUDGING_THREADS);
const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const ms = (value) => `${value.toFixed(1)} ms`;
const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');

/** A's journey, `count` times: create a run, take 3 tokens at it, finish it. Adds to `into`. */
async function partnerA(url, key, count, into) {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  for (let i = 0; i < count; i += 1) {
    let started = performance.now();
    const response = await fetch(`${url}/api/runs`, { method: 'POST', headers, body: '{"scenarios":[]}' });
    into.create.push(performance.now() - started);
    const run = await response.json();
    if (response.status !== 201) {
      into.failures[`create ${response.status}`] = (into.failures[`create ${response.status}`] ?? 0) + 1;
      continue;
    }
    for (let t = 0; t < 3; t += 1) {
      started = performance.now();
      const answer = await fetch(run.tokenUrl, {
        method: 'POST',
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: run.clientId,
          client_secret: run.clientSecret,
        }),
      });
      await answer.text();
      into.token.push(performance.now() - started);
      if (answer.status !== 200)
        into.failures[`token ${answer.status}`] = (into.failures[`token ${answer.status}`] ?? 0) + 1;
    }
    const finished = await fetch(`${url}/api/runs/${run.id}/finish`, { method: 'POST', headers, body: '{}' });
    await finished.text();
    if (finished.status !== 200)
      into.failures[`finish ${finished.status}`] = (into.failures[`finish ${finished.status}`] ?? 0) + 1;
  }
}

const samples = () => ({ create: [], token: [], failures: {} });
const summary = (phase) => {
  const create = [...phase.create].sort((a, b) => a - b);
  const token = [...phase.token].sort((a, b) => a - b);
  return {
    createP50: quantile(create, 0.5),
    createP99: quantile(create, 0.99),
    tokenP50: quantile(token, 0.5),
    tokenP99: quantile(token, 0.99),
    creates: create.length,
    tokens: token.length,
    failures: phase.failures,
  };
};

async function measure(name, databaseUrl) {
  const dir = mkdtempSync(join(tmpdir(), 'pcs-fair-'));
  const db = await openDatabase({ databaseUrl, dataDir: join(dir, 'data') });
  const signingKey = await loadSigningKey({ dataDir: dir, warn: () => {} });
  const running = await startService({
    db,
    signingKey,
    port: 0,
    tokenDelayMs: 0,
    apiDelayMs: 0,
    limits: { maxOpenRunsPerPartner: 5, maxRunsPerHour: 1_000_000 },
    ...(judgingThreads !== undefined && { judging: { threads: judgingThreads } }),
    log: () => {},
  });
  const a = await addPartner(db, 'Partner A');
  const b = await addPartner(db, 'Partner B');
  const loadBefore = load();
  await partnerA(running.url, a.apiKey, Math.min(10, iterations), samples()); // warm-up
  const quietPhase = samples();
  const floodPhase = samples();
  const floods = { waves: 0, statuses: {} };
  const perRound = Math.max(1, Math.round(iterations / rounds));
  for (let round = 0; round < rounds; round += 1) {
    await partnerA(running.url, a.apiKey, perRound, quietPhase);
    const flood = spawn(process.execPath, [fileURLToPath(new URL('./flood.mjs', import.meta.url))], {
      env: { ...process.env, FLOOD_URL: running.url, FLOOD_KEY: b.apiKey },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const floodOutput = text(flood.stdout);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await partnerA(running.url, a.apiKey, perRound, floodPhase);
    flood.stdin.end();
    const [[code], floodResult] = await Promise.all([once(flood, 'exit'), floodOutput]);
    if (code !== 0) throw new Error(`the flood process exited with ${code}`);
    const { waves, statuses } = JSON.parse(floodResult);
    floods.waves += waves;
    for (const [status, count] of Object.entries(statuses))
      floods.statuses[status] = (floods.statuses[status] ?? 0) + count;
  }
  const loadAfter = load();
  await running.close();
  await db.close();
  rmSync(dir, { recursive: true, force: true });
  const quiet = summary(quietPhase);
  const loud = summary(floodPhase);
  const failures = (result) =>
    Object.keys(result.failures).length === 0 ? '' : `; failures ${JSON.stringify(result.failures)}`;
  const line = (label, result) =>
    console.log(
      `${name}: ${label}  create p50 ${ms(result.createP50)} p99 ${ms(result.createP99)} (${result.creates}), token p50 ${ms(result.tokenP50)} p99 ${ms(result.tokenP99)} (${result.tokens})${failures(result)}`,
    );
  line('quiet', quiet);
  line('flood', loud);
  console.log(
    `${name}: B sent ${process.env.BENCH_FLOOD_MODE === 'loop' ? `from ${process.env.BENCH_FLOOD ?? 200} senders in a loop` : `${floods.waves} waves of ${process.env.BENCH_FLOOD ?? 200}`}: ${Object.entries(
      floods.statuses,
    )
      .map(([status, count]) => `${count} × ${status}`)
      .join(', ')}`,
  );
  const ratios = {
    'create p50': loud.createP50 / quiet.createP50,
    'create p99': loud.createP99 / quiet.createP99,
    'token p50': loud.tokenP50 / quiet.tokenP50,
    'token p99': loud.tokenP99 / quiet.tokenP99,
  };
  console.log(
    `${name}: ratio flood/quiet  ${Object.entries(ratios)
      .map(([what, ratio]) => `${what} ×${ratio.toFixed(2)}`)
      .join(', ')}`,
  );
  const failed = Object.keys(quiet.failures).length > 0 || Object.keys(loud.failures).length > 0;
  const pass = ratios['create p99'] <= target && ratios['token p99'] <= target && !failed;
  console.log(
    `${name}: ${pass ? 'PASS' : 'FAIL'}: create p99 ×${ratios['create p99'].toFixed(2)} and token p99 ×${ratios['token p99'].toFixed(2)} against ≤ ${target}${failed ? ', and A had failures' : ''} (load average ${loadBefore} before, ${loadAfter} after)`,
  );
  return pass;
}

console.log(
  `fairness: partner A ${iterations} × (create, 3 tokens, finish) quiet and as many under partner B's flood, in ${rounds} rounds; judging threads ${judgingThreads ?? defaultJudgingOptions.threads}; load average ${load()}`,
);
const results = [];
if (process.env.BENCH_STORES !== 'postgres') results.push(await measure('embedded (PGlite)', undefined));
if (process.env.BENCH_STORES !== 'embedded' && postgresBin()) {
  const postgres = await startPostgres({ durable: true });
  try {
    results.push(await measure('PostgreSQL       ', await postgres.database('fairness')));
  } finally {
    await postgres.stop();
  }
}
const failed = results.filter((pass) => !pass).length;
console.log(
  `fairness: ${failed === 0 ? `PASS on ${results.length} store(s)` : `FAIL on ${failed} of ${results.length} store(s)`}`,
);
