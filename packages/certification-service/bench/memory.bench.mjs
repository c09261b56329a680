// Memory: the service (in a process of its own, bench/memory-service.mjs) records BENCH_MEMORY_RUNS (200)
// runs of BENCH_MEMORY_CALLS (500) API calls each, BENCH_MEMORY_CONCURRENCY (10) runs at a time, each
// finished and judged; then reviewers read back the last sessions and reports, and the service idles
// BENCH_MEMORY_IDLE_SECONDS (35: its judging threads stop after 30 s idle). It prints the process's RSS,
// JS heap and external memory (which holds PGlite's WebAssembly memory) as it goes, and PASS or FAIL: the
// highest RSS against the bound the README states for each store (BENCH_MEMORY_BOUND_MB overrides it).
// BENCH_STORES=embedded|postgres measures one store only.
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { postgresBin, startPostgres } from '../test/support/postgres.mjs';

/** The bounds the README states (MiB of resident memory, whatever the service has recorded). */
const bounds = { embedded: 640, postgres: 320 };
const runs = Number(process.env.BENCH_MEMORY_RUNS ?? 200);
const calls = Number(process.env.BENCH_MEMORY_CALLS ?? 500);
const concurrency = Number(process.env.BENCH_MEMORY_CONCURRENCY ?? 10);
const idleSeconds = Number(process.env.BENCH_MEMORY_IDLE_SECONDS ?? 35);
const mib = (bytes) => (bytes / 1048576).toFixed(0).padStart(5);
const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');

async function journey(url, apiKey, counts) {
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const created = await fetch(`${url}/api/runs`, { method: 'POST', headers, body: '{"scenarios":[]}' });
  const run = await created.json();
  if (created.status !== 201) throw new Error(`creating a run: ${created.status} ${JSON.stringify(run)}`);
  const takeToken = async () =>
    (
      await fetch(run.tokenUrl, {
        method: 'POST',
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: run.clientId,
          client_secret: run.clientSecret,
        }),
      })
    ).json();
  let token = await takeToken();
  for (let done = 0; done < calls; done += 10) {
    const statuses = await Promise.all(
      Array.from({ length: Math.min(10, calls - done) }, async () => {
        const answer = await fetch(`${run.baseUrl}/v3/partner/${token.partnerId}/loans?limit=5`, {
          headers: { authorization: `Bearer ${token.access_token}` },
        });
        await answer.arrayBuffer();
        return answer.status;
      }),
    );
    counts.calls += statuses.length;
    if (statuses.includes(401)) token = await takeToken();
  }
  const finished = await fetch(`${url}/api/runs/${run.id}/finish`, { method: 'POST', headers, body: '{}' });
  await finished.text();
  if (finished.status !== 200) throw new Error(`finishing run ${run.id}: ${finished.status}`);
  return run.id;
}

async function measure(kind, name, databaseUrl) {
  const dir = mkdtempSync(join(tmpdir(), 'pcs-memory-'));
  const child = fork(fileURLToPath(new URL('./memory-service.mjs', import.meta.url)), {
    env: { ...process.env, MEM_DATA_DIR: dir, MEM_DATABASE_URL: databaseUrl ?? '' },
    execArgv: ['--expose-gc'],
  });
  const [{ url, apiKey }] = await once(child, 'message');
  const memory = async (message = 'memory') => {
    child.send(message);
    const [{ memory: usage }] = await once(child, 'message');
    return usage;
  };
  const bound = Number(process.env.BENCH_MEMORY_BOUND_MB ?? bounds[kind]);
  let highest = 0;
  const show = async (label, message) => {
    const usage = await memory(message);
    highest = Math.max(highest, usage.rss);
    console.log(
      `${name}: ${label.padEnd(26)} RSS ${mib(usage.rss)} MiB  heap ${mib(usage.heapUsed)} / ${mib(usage.heapTotal)}  external ${mib(usage.external)}  (load ${load()})`,
    );
  };
  await new Promise((resolve) => setTimeout(resolve, 2000));
  await show('idle after start');
  const counts = { calls: 0, runs: 0 };
  const ids = [];
  const started = performance.now();
  let next = 0;
  const every = Math.max(1, Math.round(runs / 8));
  await Promise.all(
    Array.from({ length: Math.min(concurrency, runs) }, async () => {
      while (next < runs) {
        next += 1;
        ids.push(await journey(url, apiKey, counts));
        counts.runs += 1;
        if (counts.runs % every === 0) await show(`${counts.runs} runs, ${counts.calls} calls`);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  // Reviewers read what was recorded: the last runs' sessions, reports and attestations.
  const headers = { authorization: `Bearer ${apiKey}` };
  for (const id of ids.slice(-20))
    for (const part of ['session', 'report.html', 'attestation'])
      await (await fetch(`${url}/api/runs/${id}/${part}`, { headers })).arrayBuffer();
  await show('after reading 20 runs back');
  await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000));
  await show(`idle ${idleSeconds} s`);
  // Not counted against the bound (a collection the process had not needed): what the heap retains.
  const retained = await memory('memory-after-gc');
  console.log(
    `${name}: ${'after a full collection'.padEnd(26)} RSS ${mib(retained.rss)} MiB  heap ${mib(retained.heapUsed)} / ${mib(retained.heapTotal)}  external ${mib(retained.external)}`,
  );
  child.send('stop');
  await once(child, 'exit');
  rmSync(dir, { recursive: true, force: true });
  const pass = highest <= bound * 1048576;
  console.log(
    `${name}: ${pass ? 'PASS' : 'FAIL'}: highest RSS ${mib(highest).trim()} MiB against the bound of ${bound} MiB, after ${counts.runs} runs and ${counts.calls} calls in ${seconds.toFixed(0)} s (${(counts.calls / seconds).toFixed(0)} calls/s)`,
  );
  return pass;
}

console.log(
  `memory: ${runs} runs × ${calls} calls, ${concurrency} runs at a time, each judged; load average ${load()}`,
);
const results = [];
if (process.env.BENCH_STORES !== 'postgres') results.push(await measure('embedded', 'embedded (PGlite)'));
if (process.env.BENCH_STORES !== 'embedded' && postgresBin()) {
  const postgres = await startPostgres({ durable: true });
  try {
    results.push(await measure('postgres', 'PostgreSQL       ', await postgres.database('memory')));
  } finally {
    await postgres.stop();
  }
}
const failed = results.filter((pass) => !pass).length;
console.log(
  `memory: ${failed === 0 ? `PASS on ${results.length} store(s)` : `FAIL on ${failed} of ${results.length} store(s)`}`,
);
