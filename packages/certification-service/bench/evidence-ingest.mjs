// Benchmark (not a test): production evidence ingested and judged by one service instance. Build first
// (`pnpm build`). The service runs in a process of its own (this file, forked with `service`), so that
// its memory is its alone: one instance on each store (embedded PGlite; a throwaway PostgreSQL when its
// binaries are installed), an evidence reporter (addEvidenceReporter) and BENCH_SENDERS × 5 partners
// (addPartner), its regression watch judging as it runs. BENCH_SENDERS (4) concurrent senders POST
// OTLP/HTTP JSON batches of BENCH_BATCH (1000) log records each — a correct client's exchanges, as the
// production gate reports them (a token request, then API calls presenting that token) — as fast as the
// service answers, for BENCH_SECONDS (20) per round, BENCH_ROUNDS (3) rounds. The baseline, in the same
// run and rounds (alternated): the same batches POSTed to a bare node:http server, in a process of its
// own, that only reads the body (the floor), for BENCH_FLOOR_SECONDS (5). Printed per round: exchanges
// ingested per second (counted in the database), judged per second (counted as evidence_queue empties,
// until it is empty), the ratio to the floor, and the service's RSS; at the end its peak RSS (VmHWM).
// Target (issue 52): ≥ 10 000 exchanges/s ingested and judged, memory bounded. BENCH_STORES=embedded|postgres
// one store only. BENCH_DIST=FILE measures another build's index.js (unset: ../dist); BENCH_CPU_PROF=DIR
// writes the service's CPU profiles (every thread) there.
import { fork } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const self = fileURLToPath(import.meta.url);
const target = 10_000;

/** This process's resident set now and at its peak (VmRSS, VmHWM), in MiB (Linux), else rss. */
function memory() {
  try {
    const status = readFileSync('/proc/self/status', 'utf8');
    const kib = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
  } catch {
    const rss = process.memoryUsage().rss / 1048576;
    return { rss, peak: Number.NaN };
  }
}

if (process.argv[2] === 'floor') {
  // The floor: reads the body, answers 200 {} (what an OTLP receiver answers), nothing else.
  const server = createServer((req, res) => {
    req.on('data', () => undefined);
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  server.listen(0, '127.0.0.1', () => process.send({ url: `http://127.0.0.1:${server.address().port}` }));
  process.on('message', (message) => {
    if (message === 'memory') process.send({ memory: memory() });
    if (message === 'stop') server.close(() => process.exit(0));
  });
} else if (process.argv[2] === 'service') {
  const { addEvidenceReporter, addPartner, loadSigningKey, openDatabase, startService } = await import(
    process.env.BENCH_DIST
      ? new URL(process.env.BENCH_DIST, `file://${process.cwd()}/`).href
      : '../dist/index.js'
  );
  const dataDir = process.env.BENCH_DATA_DIR;
  const db = await openDatabase({ databaseUrl: process.env.BENCH_DATABASE_URL || undefined, dataDir });
  const signingKey = await loadSigningKey({ dataDir, warn: () => undefined });
  const service = await startService({ db, signingKey, port: 0, log: () => undefined });
  const partners = [];
  for (let index = 0; index < Number(process.env.BENCH_PARTNERS); index += 1)
    partners.push((await addPartner(db, `Evidence Bench ${index}`)).partnerId);
  const { key } = await addEvidenceReporter(db, 'bench gateway');
  const count = async (table) => Number((await db.query(`SELECT count(*)::int AS n FROM ${table}`))[0].n);
  process.on('message', async (message) => {
    if (message === 'counts')
      process.send({
        counts: { exchanges: await count('evidence_exchanges'), queue: await count('evidence_queue') },
        memory: memory(),
      });
    // While the queue drains, only the queue is counted: counting every stored exchange each 250 ms took
    // the database's thread from judging (54 ms a count after a minute on the embedded store).
    if (message === 'queue')
      process.send({ counts: { queue: await count('evidence_queue') }, memory: memory() });
    if (message === 'stop') {
      await service.close();
      await db.close();
      process.exit(0);
    }
  });
  process.send({ url: service.url, key, partners });
} else {
  await main();
}

function child(role, env = {}) {
  const process_ = fork(self, [role], {
    env: { ...process.env, ...env },
    // BENCH_CPU_PROF=DIR: the service's threads (HTTP and the embedded database's) write V8 CPU profiles there.
    execArgv:
      role === 'service' && process.env.BENCH_CPU_PROF
        ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_CPU_PROF]
        : [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ask = async (message) => {
    const answer = once(process_, 'message');
    process_.send(message);
    return (await answer)[0];
  };
  return {
    ready: once(process_, 'message').then(([message]) => message),
    ask,
    async stop() {
      process_.send('stop');
      await once(process_, 'exit');
    },
  };
}

/** A sender's partners, each a correct client: one token, then API calls presenting it. */
function sender(partners) {
  const clients = partners.map((partnerId) => ({ partnerId, fingerprint: undefined, issuedAt: 0 }));
  const text = (key, value) => ({ key, value: { stringValue: value } });
  const int = (key, value) => ({ key, value: { intValue: String(value) } });
  return function batch(size) {
    const now = Date.now();
    const records = [];
    for (let index = 0; index < size; index += 1) {
      const client = clients[index % clients.length];
      // Nanoseconds: this millisecond and the record's place in the batch, so a partner's are in order.
      const timeUnixNano = `${now}${String(index * 1000).padStart(6, '0')}`;
      if (client.fingerprint === undefined || now - client.issuedAt > 300_000) {
        client.fingerprint = randomBytes(16).toString('base64url');
        client.issuedAt = now;
        records.push({
          timeUnixNano,
          attributes: [
            text('partner.id', client.partnerId),
            text('http.request.method', 'POST'),
            text('url.path', '/oauth/token'),
            int('http.response.status_code', 200),
            text('token.fingerprint', client.fingerprint),
            text('oauth.grant_type', 'client_credentials'),
            text('oauth.scope.granted', 'read:loans create:loan_draft'),
            int('oauth.token.expires_in', 3600),
          ],
        });
        continue;
      }
      records.push({
        timeUnixNano,
        attributes: [
          text('partner.id', client.partnerId),
          text('http.request.method', 'GET'),
          text('url.path', `/v3/partner/${client.partnerId}/loans`),
          int('http.response.status_code', 200),
          text('token.fingerprint', client.fingerprint),
        ],
      });
    }
    return JSON.stringify({
      resourceLogs: [
        {
          resource: { attributes: [text('service.name', 'partner-mock')] },
          scopeLogs: [{ scope: { name: 'partner-mock' }, logRecords: records }],
        },
      ],
    });
  };
}

/** BENCH_SENDERS senders POSTing batches for `seconds`, closed loop; 429/503 wait their Retry-After. */
async function send(url, key, partners, seconds, senders, size) {
  const perSender = partners.length / senders;
  const until = performance.now() + seconds * 1000;
  const tally = { batches: 0, records: 0, refused: 0, failed: 0 };
  await Promise.all(
    Array.from({ length: senders }, async (_, index) => {
      const batch = sender(partners.slice(index * perSender, (index + 1) * perSender));
      while (performance.now() < until) {
        const body = batch(size);
        for (;;) {
          const response = await fetch(`${url}/evidence`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              authorization: `Bearer ${key}`,
              'idempotency-key': randomUUID(),
            },
            body,
          });
          await response.arrayBuffer();
          if (response.status === 200) break;
          if (response.status === 429 || response.status === 503) {
            tally.refused += 1;
            await sleep(Number(response.headers.get('retry-after') ?? 1) * 1000);
            continue;
          }
          tally.failed += 1;
          throw new Error(`POST /evidence answered ${response.status}: the bench is not valid`);
        }
        tally.batches += 1;
        tally.records += size;
      }
    }),
  );
  return tally;
}

async function main() {
  const seconds = Number(process.env.BENCH_SECONDS ?? 20);
  const floorSeconds = Number(process.env.BENCH_FLOOR_SECONDS ?? 5);
  const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
  const senders = Math.max(1, Number(process.env.BENCH_SENDERS ?? 4));
  const size = Number(process.env.BENCH_BATCH ?? 1000);
  const drainLimitSeconds = Number(process.env.BENCH_DRAIN_SECONDS ?? 120);
  const partnerCount = senders * 5;
  const stores = (process.env.BENCH_STORES ?? 'embedded,postgres').split(',');
  const load = () =>
    loadavg()
      .map((value) => value.toFixed(2))
      .join(' ');
  console.log(
    `evidence ingest bench: ${senders} senders × batches of ${size} records, ${partnerCount} partners, ${rounds} rounds × ${seconds} s per store (floor ${floorSeconds} s), load average ${load()}`,
  );
  const floor = child('floor');
  const { url: floorUrl } = await floor.ready;
  const floorPartners = Array.from({ length: partnerCount }, (_, index) => `ptn_floor_${index}`);
  const results = [];
  // A warm-up of the senders against the floor, not counted: the first round's floor is otherwise cold.
  await send(floorUrl, 'floor', floorPartners, Math.min(5, floorSeconds), senders, size);

  async function measure(label, env) {
    const service = child('service', { BENCH_PARTNERS: String(partnerCount), ...env });
    const { url, key, partners } = await service.ready;
    const summary = { label, ingested: [], judged: [], ratios: [], rss: [], drain: [] };
    for (let round = 1; round <= rounds; round += 1) {
      const floorTally = await send(floorUrl, 'floor', floorPartners, floorSeconds, senders, size);
      const floorRate = floorTally.records / floorSeconds;
      const before = (await service.ask('counts')).counts;
      const started = performance.now();
      const tally = await send(url, key, partners, seconds, senders, size);
      const sent = (performance.now() - started) / 1000;
      const at = await service.ask('counts');
      const ingested = at.counts.exchanges - before.exchanges;
      if (ingested !== tally.records)
        throw new Error(`${tally.records} records acknowledged, ${ingested} stored: the bench is not valid`);
      // Judged: the queue empties as the watch judges; wait for it (bounded).
      let queue = at.counts.queue;
      let peakRss = at.memory.rss;
      while (queue > 0 && (performance.now() - started) / 1000 < sent + drainLimitSeconds) {
        await sleep(250);
        const now = await service.ask('queue');
        queue = now.counts.queue;
        peakRss = Math.max(peakRss, now.memory.rss);
      }
      const total = (performance.now() - started) / 1000;
      const judged = ingested + before.queue - queue;
      const ingestRate = ingested / sent;
      const judgeRate = judged / total;
      summary.ingested.push(ingestRate);
      summary.judged.push(judgeRate);
      summary.ratios.push(ingestRate / floorRate);
      summary.rss.push(peakRss);
      summary.drain.push(total - sent);
      console.log(
        `${label} round ${round}: ingested ${Math.round(ingestRate)} exchanges/s (${ingested} in ${sent.toFixed(1)} s, ${tally.refused} batches answered 429/503), judged ${Math.round(judgeRate)}/s (queue ${at.counts.queue} at the end of sending, ${queue} left ${(total - sent).toFixed(1)} s later) | floor ${Math.round(floorRate)}/s | service/floor ${(ingestRate / floorRate).toFixed(3)} | RSS ${at.memory.rss.toFixed(0)} MiB at the end of sending, ${peakRss.toFixed(0)} MiB at most while judging | load ${load()}`,
      );
    }
    summary.peak = (await service.ask('counts')).memory.peak;
    await service.stop();
    results.push(summary);
  }

  if (stores.includes('embedded')) {
    const dir = mkdtempSync(join(tmpdir(), 'pcs-evidence-bench-'));
    try {
      await measure('embedded (PGlite)', { BENCH_DATA_DIR: join(dir, 'data') });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  if (stores.includes('postgres')) {
    const { postgresBin, startPostgres } = await import('../test/support/postgres.mjs');
    if (!postgresBin()) console.log('PostgreSQL: not installed, not measured (apt-get install postgresql)');
    else {
      const postgres = await startPostgres({ durable: true });
      const keyDir = mkdtempSync(join(tmpdir(), 'pcs-evidence-bench-key-'));
      try {
        await measure('PostgreSQL', {
          BENCH_DATABASE_URL: await postgres.database('evidence'),
          BENCH_DATA_DIR: keyDir,
        });
      } finally {
        await postgres.stop();
        rmSync(keyDir, { recursive: true, force: true });
      }
    }
  }
  await floor.stop();

  const range = (values, digits = 0) =>
    `${Math.min(...values).toFixed(digits)} to ${Math.max(...values).toFixed(digits)}`;
  const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  for (const summary of results) {
    const verdict = Math.min(median(summary.ingested), median(summary.judged));
    console.log(
      `${summary.label}: ingested ${range(summary.ingested)} exchanges/s, judged ${range(summary.judged)}/s, service/floor ${range(summary.ratios, 3)}, queue drained ${range(summary.drain, 1)} s after sending stopped, RSS at most ${range(summary.rss)} MiB per round, peak (VmHWM) ${summary.peak.toFixed(0)} MiB; target ≥ ${target} exchanges/s ingested and judged (median of the rounds): ${verdict >= target ? 'PASS' : 'FAIL'} (${Math.round(verdict)})`,
    );
  }
}
