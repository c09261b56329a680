// 50 concurrent runs, each a journey of ~10 calls per second for BENCH_SECONDS (default 30), against
// (1) 50 local stages of `partner-conformance client` (the baseline, measured in the same run), (2) one
// service instance on the embedded store, (3) one instance on a throwaway PostgreSQL. Prints the
// latency each call adds over the local stage (p50, p99), the exchanges lost (answered by the service,
// missing from its session: must be 0), and the time to judge a run. Build first (`pnpm build`).
// Targets (issue): p99 added under 5 ms, judging under 1 s per run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startStage } from '@partner-lending/conformance';
import { addPartner, loadSigningKey, openDatabase, startService } from '../dist/index.js';
import { postgresBin, startPostgres } from '../test/support/postgres.mjs';

const runs = Number(process.env.BENCH_RUNS ?? 50);
const seconds = Number(process.env.BENCH_SECONDS ?? 30);
const rate = 10; // calls per second per journey

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

/** One journey: a token, then a call every 100 ms for `seconds`; latencies in ms. */
async function journey(env) {
  const answer = await (
    await fetch(env.tokenUrl, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: env.clientId,
        client_secret: env.clientSecret,
        scope: 'read:loans',
      }),
    })
  ).json();
  const latencies = [];
  let answered = 1;
  const end = performance.now() + seconds * 1000;
  // Start spread over the first period, as 50 independent programs would.
  await new Promise((resolve) => setTimeout(resolve, Math.random() * (1000 / rate)));
  while (performance.now() < end) {
    const started = performance.now();
    const response = await fetch(`${env.baseUrl}/v3/partner/${answer.partnerId}/loans?limit=5`, {
      headers: { authorization: `Bearer ${answer.access_token}` },
    });
    await response.arrayBuffer();
    const took = performance.now() - started;
    latencies.push(took);
    answered += 1;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1000 / rate - took)));
  }
  return { latencies, answered };
}

function summary(all) {
  const sorted = all.flatMap((item) => item.latencies).sort((a, b) => a - b);
  return { calls: sorted.length, p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99) };
}

async function baseline() {
  const stages = await Promise.all(
    Array.from({ length: runs }, () => startStage({ scenarios: [], tokenDelayMs: 0, apiDelayMs: 0 })),
  );
  const results = await Promise.all(
    stages.map((stage) =>
      journey({
        tokenUrl: stage.tokenUrl,
        baseUrl: stage.baseUrl,
        clientId: stage.client.clientId,
        clientSecret: stage.client.clientSecret,
      }),
    ),
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
  const results = await Promise.all(created.map((run) => journey(run)));
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
console.log(`local stage (baseline)   ${local.calls} calls, p50 ${ms(local.p50)}, p99 ${ms(local.p99)}`);
const stores = [['embedded (PGlite)', undefined]];
let postgres;
// BENCH_STORES=embedded measures PGlite only (e.g. under --cpu-prof).
if (process.env.BENCH_STORES === 'embedded') console.log('PostgreSQL: skipped (BENCH_STORES=embedded)');
else if (postgresBin()) {
  postgres = await startPostgres();
  stores.push(['PostgreSQL', await postgres.database('bench')]);
} else console.log('PostgreSQL: not installed (apt-get install postgresql); measured on PGlite only');
for (const [name, url] of stores) {
  const result = await service(url);
  console.log(
    `service, ${name.padEnd(17)} ${result.calls} calls, p50 ${ms(result.p50)} (+${ms(result.p50 - local.p50)}, ×${(result.p50 / local.p50).toFixed(2)}), p99 ${ms(result.p99)} (+${ms(result.p99 - local.p99)}); exchanges lost ${result.lost}; judging a run p50 ${ms(result.judgeP50)}, max ${ms(result.judgeMax)}`,
  );
}
await postgres?.stop();
