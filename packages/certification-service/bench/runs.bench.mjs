// 50 concurrent runs, each a journey of ~10 calls per second for BENCH_SECONDS (default 30), against
// (1) 50 local stages of `partner-conformance client` (the baseline, measured in the same run), (2) one
// service instance on the embedded store, (3) one instance on a throwaway PostgreSQL. Prints the
// latency each call adds over the local stage (p50, p99), the exchanges lost (answered by the service,
// missing from its session: must be 0), and the time to judge a run. Build first (`pnpm build`).
// Targets (issue): p99 added under 5 ms, judging under 1 s per run.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { fileURLToPath } from 'node:url';
import { startStage } from '@partner-lending/conformance';
import { addPartner, loadSigningKey, openDatabase, startService } from '../dist/index.js';
import { postgresBin, startPostgres } from '../test/support/postgres.mjs';

const runs = Number(process.env.BENCH_RUNS ?? 50);
const seconds = Number(process.env.BENCH_SECONDS ?? 30);
const rate = 10; // calls per second per journey

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

/** Runs the journeys in a process of their own (bench/load.mjs): what each measured. */
async function journeys(envs) {
  const load = spawn(process.execPath, [fileURLToPath(new URL('./load.mjs', import.meta.url))], {
    env: { ...process.env, BENCH_SECONDS: String(seconds), BENCH_RATE: String(rate) },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  load.stdin.end(JSON.stringify(envs));
  const [output, [code]] = await Promise.all([text(load.stdout), once(load, 'exit')]);
  if (code !== 0) throw new Error(`the load process exited with ${code}`);
  return JSON.parse(output);
}

function summary(all) {
  const sorted = all.flatMap((item) => item.latencies.api).sort((a, b) => a - b);
  const tokens = all.flatMap((item) => item.latencies.token).sort((a, b) => a - b);
  const refused = {};
  for (const item of all)
    for (const [status, count] of Object.entries(item.refused))
      refused[status] = (refused[status] ?? 0) + count;
  return {
    calls: sorted.length,
    p50: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
    tokens: tokens.length,
    tokenP50: quantile(tokens, 0.5),
    tokenP99: quantile(tokens, 0.99),
    refused,
  };
}

async function baseline() {
  const stages = await Promise.all(
    Array.from({ length: runs }, () => startStage({ scenarios: [], tokenDelayMs: 0, apiDelayMs: 0 })),
  );
  const results = await journeys(
    stages.map((stage) => ({
      tokenUrl: stage.tokenUrl,
      baseUrl: stage.baseUrl,
      clientId: stage.client.clientId,
      clientSecret: stage.client.clientSecret,
    })),
  );
  await Promise.all(stages.map((stage) => stage.close()));
  return summary(results);
}

async function service(databaseUrl) {
  const dir = mkdtempSync(join(tmpdir(), 'pcs-bench-'));
  const db = await openDatabase({ databaseUrl, dataDir: join(dir, 'data') });
  const signingKey = await loadSigningKey({ dataDir: dir, warn: () => {} });
  const running = await startService({
    db,
    signingKey,
    port: 0,
    tokenDelayMs: 0,
    apiDelayMs: 0,
    limits: { maxOpenRunsPerPartner: runs, maxRunsPerHour: runs * 10 },
    log: () => {},
  });
  const { apiKey } = await addPartner(db, 'Bench');
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const created = await Promise.all(
    Array.from({ length: runs }, async () =>
      (await fetch(`${running.url}/api/runs`, { method: 'POST', headers, body: '{"scenarios":[]}' })).json(),
    ),
  );
  const results = await journeys(created);
  let lost = 0;
  const judging = [];
  for (const [index, run] of created.entries()) {
    const started = performance.now();
    await (
      await fetch(`${running.url}/api/runs/${run.id}/finish`, { method: 'POST', headers, body: '{}' })
    ).json();
    judging.push(performance.now() - started);
    const session = await (await fetch(`${running.url}/api/runs/${run.id}/session`, { headers })).json();
    lost += Math.max(0, results[index].answered - session.exchanges.length);
  }
  await running.close();
  await db.close();
  rmSync(dir, { recursive: true, force: true });
  judging.sort((a, b) => a - b);
  return { ...summary(results), lost, judgeP50: quantile(judging, 0.5), judgeMax: judging.at(-1) };
}

const ms = (value) => `${value.toFixed(2)} ms`;
console.log(`${runs} concurrent runs × ${seconds} s at ${rate} calls/s each, scenarios off, stage delays 0`);
const local = await baseline();
/** Calls not answered 200 (none expected: the journeys renew their tokens in time). */
const notOk = (refused) =>
  Object.keys(refused).length === 0
    ? ''
    : `; not 200: ${Object.entries(refused)
        .map(([status, count]) => `${count} × ${status}`)
        .join(', ')}`;
console.log(
  `local stage (baseline)   ${local.calls} API calls, p50 ${ms(local.p50)}, p99 ${ms(local.p99)}; ${local.tokens} token requests, p50 ${ms(local.tokenP50)}, p99 ${ms(local.tokenP99)}${notOk(local.refused)}`,
);
const stores = [['embedded (PGlite)', undefined]];
let postgres;
// BENCH_STORES=embedded measures PGlite only (e.g. under --cpu-prof).
if (process.env.BENCH_STORES === 'embedded') console.log('PostgreSQL: skipped (BENCH_STORES=embedded)');
else if (postgresBin()) {
  postgres = await startPostgres({ durable: true });
  stores.push(['PostgreSQL', await postgres.database('bench')]);
} else console.log('PostgreSQL: not installed (apt-get install postgresql); measured on PGlite only');
for (const [name, url] of stores) {
  const result = await service(url);
  console.log(
    `service, ${name.padEnd(17)} ${result.calls} API calls, p50 ${ms(result.p50)} (+${ms(result.p50 - local.p50)}, ×${(result.p50 / local.p50).toFixed(2)}), p99 ${ms(result.p99)} (+${ms(result.p99 - local.p99)}); ${result.tokens} token requests, p50 ${ms(result.tokenP50)} (+${ms(result.tokenP50 - local.tokenP50)}), p99 ${ms(result.tokenP99)} (+${ms(result.tokenP99 - local.tokenP99)}); exchanges lost ${result.lost}; judging a run p50 ${ms(result.judgeP50)}, max ${ms(result.judgeMax)}${notOk(result.refused)}`,
  );
}
await postgres?.stop();
