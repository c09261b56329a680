// Fairness: partner A's run creation and token request, measured quiet and then while partner B (in a
// process of its own, bench/flood.mjs) floods waves of 200 concurrent creations (most refused 429,
// some accepted). Prints A's p50/p99 in both phases and the ratio flood/quiet (target: p99 within 2×).
// BENCH_FAIR_ITERATIONS (default 40) creations by A per phase; BENCH_STORES=embedded skips PostgreSQL.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { fileURLToPath } from 'node:url';
import { addPartner, loadSigningKey, openDatabase, startService } from '../dist/index.js';
import { postgresBin, startPostgres } from '../test/support/postgres.mjs';

const iterations = Number(process.env.BENCH_FAIR_ITERATIONS ?? 40);
const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const ms = (value) => `${value.toFixed(1)} ms`;

/** A's journey, `iterations` times: create a run, take 3 tokens at it, finish it. */
async function partnerA(url, key) {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const create = [];
  const token = [];
  const failures = {};
  for (let i = 0; i < iterations; i += 1) {
    let started = performance.now();
    const response = await fetch(`${url}/api/runs`, { method: 'POST', headers, body: '{"scenarios":[]}' });
    create.push(performance.now() - started);
    const run = await response.json();
    if (response.status !== 201) {
      failures[`create ${response.status}`] = (failures[`create ${response.status}`] ?? 0) + 1;
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
      token.push(performance.now() - started);
      if (answer.status !== 200)
        failures[`token ${answer.status}`] = (failures[`token ${answer.status}`] ?? 0) + 1;
    }
    await (await fetch(`${url}/api/runs/${run.id}/finish`, { method: 'POST', headers, body: '{}' })).text();
  }
  create.sort((a, b) => a - b);
  token.sort((a, b) => a - b);
  return {
    createP50: quantile(create, 0.5),
    createP99: quantile(create, 0.99),
    tokenP50: quantile(token, 0.5),
    tokenP99: quantile(token, 0.99),
    failures,
  };
}

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
    log: () => {},
  });
  const a = await addPartner(db, 'Partner A');
  const b = await addPartner(db, 'Partner B');
  await partnerA(running.url, a.apiKey); // warm-up
  const quiet = await partnerA(running.url, a.apiKey);
  const flood = spawn(process.execPath, [fileURLToPath(new URL('./flood.mjs', import.meta.url))], {
    env: { ...process.env, FLOOD_URL: running.url, FLOOD_KEY: b.apiKey },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const floodOutput = text(flood.stdout);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const loud = await partnerA(running.url, a.apiKey);
  flood.stdin.end();
  const [[code], floodResult] = await Promise.all([once(flood, 'exit'), floodOutput]);
  if (code !== 0) throw new Error(`the flood process exited with ${code}`);
  const { waves, statuses } = JSON.parse(floodResult);
  await running.close();
  await db.close();
  rmSync(dir, { recursive: true, force: true });
  const failures = (result) =>
    Object.keys(result.failures).length === 0 ? '' : `; failures ${JSON.stringify(result.failures)}`;
  console.log(
    `${name}: quiet  create p50 ${ms(quiet.createP50)} p99 ${ms(quiet.createP99)}, token p50 ${ms(quiet.tokenP50)} p99 ${ms(quiet.tokenP99)}${failures(quiet)}`,
  );
  console.log(
    `${name}: flood  create p50 ${ms(loud.createP50)} p99 ${ms(loud.createP99)}, token p50 ${ms(loud.tokenP50)} p99 ${ms(loud.tokenP99)}${failures(loud)}`,
  );
  console.log(
    `${name}: B sent ${waves} waves of ${process.env.BENCH_FLOOD ?? 200}: ${Object.entries(statuses)
      .map(([status, count]) => `${count} × ${status}`)
      .join(', ')}`,
  );
  console.log(
    `${name}: ratio flood/quiet  create p99 ×${(loud.createP99 / quiet.createP99).toFixed(2)}, token p99 ×${(loud.tokenP99 / quiet.tokenP99).toFixed(2)} (target ≤ 2)`,
  );
}

console.log(
  `fairness: partner A ${iterations} × (create, 3 tokens, finish), quiet then under partner B's flood`,
);
// BENCH_STORES=embedded or =postgres measures one store only.
if (process.env.BENCH_STORES !== 'postgres') await measure('embedded (PGlite)', undefined);
if (process.env.BENCH_STORES !== 'embedded' && postgresBin()) {
  const postgres = await startPostgres({ durable: true });
  try {
    await measure('PostgreSQL       ', await postgres.database('fairness'));
  } finally {
    await postgres.stop();
  }
}
