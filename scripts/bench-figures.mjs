// `pnpm bench:figures`: the service's and the Redis store's speed figures from one command, as ranges over
// several rounds, each bench measuring its baseline (local stages) in the same run. It runs, one after the
// other (never together: they would measure each other):
//   cold       certification-service bench/cold.bench.mjs  — a fresh instance, cold then warm, both stores
//   instances  certification-service bench/runs.bench.mjs  — throughput and latency per store
//   failover   token-store-redis bench/failover.bench.mjs  — the fleet back on Redis, per failover
// Every bench's own lines go to the terminal as they come; at the end this prints the summary lines of
// each (its verdicts and ranges), with the load average before and after it and how long it took.
//
// Build first (`pnpm build`) and install the servers (`pnpm prerequisites --install`: PostgreSQL and
// redis-server). Options (environment):
//   FIGURES_ROUNDS (3)        rounds of the cold and instances benches
//   FIGURES_FAILOVERS (10)    failovers per topology
//   FIGURES_SECTIONS (cold,instances,failover)  which benches, in that order
//   FIGURES_SECTION_MINUTES (60)  the longest one bench may run; past it, it is stopped and counted failed
// Any other variable a bench reads (BENCH_STORES, FAILOVER_TOPOLOGIES, …) is passed through to it.
// Exit code 1 when a bench did not finish (a FAIL line is a figure, not an error).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sections, summaryLines } from './bench-figures-lines.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));

function positive(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) {
    console.error(
      `${name} is ${JSON.stringify(raw)}; expected a whole number of at least 1 (default ${fallback})`,
    );
    process.exit(2);
  }
  return value;
}

const rounds = positive('FIGURES_ROUNDS', 3);
const failovers = positive('FIGURES_FAILOVERS', 10);
const minutes = positive('FIGURES_SECTION_MINUTES', 60);
const names = (process.env.FIGURES_SECTIONS ?? sections.map((section) => section.name).join(','))
  .split(',')
  .map((name) => name.trim())
  .filter(Boolean);
const unknown = names.filter((name) => !sections.some((section) => section.name === name));
if (unknown.length > 0 || names.length === 0) {
  console.error(
    `FIGURES_SECTIONS names ${unknown.length ? unknown.map((name) => JSON.stringify(name)).join(', ') : 'nothing'}; expected a list of ${sections.map((section) => section.name).join(', ')}`,
  );
  process.exit(2);
}
for (const section of sections) {
  const dist = join(root, section.cwd, 'dist');
  if (names.includes(section.name) && !existsSync(dist)) {
    console.error(`${section.cwd} is not built (no ${dist}): run \`pnpm build\` first`);
    process.exit(2);
  }
}

const load = () =>
  loadavg()
    .map((value) => value.toFixed(1))
    .join(' ');

/** Runs one bench, its output on the terminal and kept; resolves with what it printed and how it ended. */
function runBench(section) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [section.script], {
      cwd: join(root, section.cwd),
      env: { ...process.env, ...section.env({ rounds, failovers }) },
      stdio: ['ignore', 'pipe', 'inherit'],
      detached: true,
    });
    let output = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      output += chunk;
      process.stdout.write(chunk);
    });
    let overran = false;
    const timer = setTimeout(() => {
      overran = true;
      // The bench's whole process group: its servers and workers stop with it.
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }, minutes * 60_000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ output, code, signal, overran });
    });
  });
}

const started = new Date();
console.log(
  `bench:figures: ${names.join(', ')}; ${rounds} rounds, ${failovers} failovers per topology; load average ${load()}`,
);
const results = [];
for (const name of names) {
  const section = sections.find((candidate) => candidate.name === name);
  console.log(`\n== ${name}: ${section.title} (${section.cwd}/${section.script})`);
  const before = load();
  const t0 = performance.now();
  const ended = await runBench(section);
  results.push({ section, before, after: load(), seconds: (performance.now() - t0) / 1000, ...ended });
}

console.log(`\n==== Figures (pnpm bench:figures, started ${started.toISOString()}) ====`);
let unfinished = 0;
for (const { section, before, after, seconds, output, code, signal, overran } of results) {
  const how =
    code === 0
      ? 'finished'
      : overran
        ? `stopped after ${minutes} min (FIGURES_SECTION_MINUTES)`
        : `ended with ${signal ?? `exit code ${code}`}`;
  if (code !== 0) unfinished += 1;
  console.log(
    `\n${section.name}: ${section.title}; ${how} in ${(seconds / 60).toFixed(1)} min, load average ${before} before, ${after} after`,
  );
  const lines = summaryLines(output);
  if (lines.length === 0) console.log('  (no summary line: see its output above)');
  for (const line of lines) console.log(`  ${line}`);
}
if (unfinished > 0) {
  console.log(`\n${unfinished} bench(es) did not finish: their figures above are partial or missing.`);
  process.exitCode = 1;
}
