import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  addPartner,
  type Database,
  loadSigningKey,
  openDatabase,
  type RunningService,
  type ServiceOptions,
  startService,
} from '../src/index.js';
import { registry } from '../src/observability/metrics.js';
import { api, runToken, startServe } from './support/service.js';

/** Every table's rows that a warm-up could leave behind, counted. */
const tables = [
  'partners',
  'runs',
  'exchanges',
  'run_tokens',
  'rate_events',
  'audit_log',
  'webhook_events',
  'register_documents',
  'evidence_exchanges',
  'security_events',
] as const;

async function counts(db: Database): Promise<Record<(typeof tables)[number], number>> {
  const result = {} as Record<(typeof tables)[number], number>;
  for (const table of tables)
    result[table] = Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`))[0]!.n);
  return result;
}

/** The stage calls counted by the metrics registry (every kind and status). */
async function stageCalls(): Promise<number> {
  const metric = registry.getSingleMetric('certification_stage_requests_total');
  return ((await metric!.get()).values as { value: number }[]).reduce((sum, item) => sum + item.value, 0);
}

/** A free port on 127.0.0.1 (bound, read, released), so that the test knows the URL before start resolves. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * The database with its first `INSERT INTO partners` (the warm-up's first statement) held until
 * `release()` (or failed with `fail()`): the warm-up is under way for as long as the test needs.
 */
function gated(db: Database) {
  let open!: () => void;
  let refuse!: (error: Error) => void;
  const gate = new Promise<void>((resolve, reject) => {
    open = resolve;
    refuse = reject;
  });
  gate.catch(() => {});
  let held = false;
  const proxy = new Proxy(db, {
    get(target, property, receiver) {
      if (property !== 'query') return Reflect.get(target, property, receiver);
      return async (sql: string, params?: unknown[]) => {
        if (!held && sql.startsWith('INSERT INTO partners')) {
          held = true;
          await gate;
        }
        return target.query(sql, params);
      };
    },
  });
  return { db: proxy, release: open, fail: refuse };
}

const opened: { dir: string; db: Database; services: RunningService[] }[] = [];
afterEach(async () => {
  for (const { dir, db, services } of opened.splice(0)) {
    for (const service of services) await service.close();
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

async function fresh() {
  const dir = mkdtempSync(join(tmpdir(), 'pcs-warmup-'));
  const db = await openDatabase({ dataDir: join(dir, 'data') });
  const signingKey = await loadSigningKey({ dataDir: dir, warn: () => {} });
  const entry = { dir, db, services: [] as RunningService[] };
  opened.push(entry);
  const lines: string[] = [];
  const start = async (options: Partial<ServiceOptions> = {}) => {
    const service = await startService({
      db,
      signingKey,
      port: 0,
      log: (line) => lines.push(line),
      ...options,
    });
    entry.services.push(service);
    return service;
  };
  return { dir, db, signingKey, lines, start };
}

describe('the start-up warm-up', () => {
  it('keeps /readyz at 503 "warming up" (and /healthz at 200) until it is done, then 200', async () => {
    const { db, lines, start } = await fresh();
    const { db: held, release } = gated(db);
    const port = await freePort();
    const starting = start({ db: held, port });
    const url = `http://127.0.0.1:${port}`;
    // The instance listens while its warm-up is held at its first statement.
    const readyz = () => api(url, undefined, 'GET', '/readyz').catch(() => undefined);
    let readiness = await readyz();
    while (!readiness) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      readiness = await readyz();
    }
    expect(readiness.status).toBe(503);
    expect(readiness.headers.get('retry-after')).not.toBeNull();
    expect(readiness.json()).toMatchObject({ status: 'unavailable', checks: { warmUp: 'warming up' } });
    expect(readiness.json().checks).toMatchObject({ database: 'ok', migrations: 'ok', signingKey: 'ok' });
    expect((await api(url, undefined, 'GET', '/healthz')).status).toBe(200);
    release();
    const service = await starting;
    const outcome = await service.warmedUp;
    expect(outcome.state).toBe('ok');
    // Its stage answered tokens and the partner API calls it made.
    expect(outcome.statuses['token 200']).toBeGreaterThan(0);
    expect(outcome.statuses['200']).toBeGreaterThan(100);
    const ready = await api(url, undefined, 'GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.json()).toMatchObject({ status: 'ready', checks: { warmUp: 'ok' } });
    expect(lines.some((line) => line.startsWith('warm-up done in'))).toBe(true);
  });

  it('leaves nothing behind: no partner, run, exchange, token, audit line, event or metric (control: an ordinary run is seen)', async () => {
    // The same database, once without a warm-up and once with one: every count the same.
    const { db, start } = await fresh();
    const before = await start({ warmUp: false });
    await before.close();
    const calls = await stageCalls();
    const baseline = await counts(db);
    const service = await start({ warmUp: { calls: 300 } });
    expect((await service.warmedUp).state).toBe('ok');
    expect(await counts(db)).toEqual(baseline);
    expect(await stageCalls()).toBe(calls);
    // The reviewer's runs list, read the way the UI reads it, is empty too.
    expect(await db.query('SELECT id FROM runs')).toEqual([]);
    // Negative control: a run made the ordinary way, with a token taken, is seen by the same queries.
    const partner = await addPartner(db, 'Control');
    const created = await api(service.url, partner.apiKey, 'POST', '/api/runs', {});
    expect(created.status).toBe(201);
    expect((await runToken(created.json())).status).toBe(200);
    const after = await counts(db);
    expect(after.partners).toBe(baseline.partners + 1);
    expect(after.runs).toBe(baseline.runs + 1);
    expect(after.audit_log).toBeGreaterThan(baseline.audit_log);
    expect(after.rate_events).toBe(baseline.rate_events + 1);
    expect(await stageCalls()).toBeGreaterThan(calls);
  });

  it('becomes ready anyway when its deadline passes, and still cleans up behind it', async () => {
    const { db, lines, start } = await fresh();
    const baseline = await (async () => {
      const plain = await start({ warmUp: false });
      await plain.close();
      return counts(db);
    })();
    const { db: held, release } = gated(db);
    const service = await start({ db: held, warmUp: { deadlineMs: 200 } });
    expect((await service.warmedUp).state).toBe('overran');
    const readiness = await api(service.url, undefined, 'GET', '/readyz');
    expect(readiness.status).toBe(200);
    expect(readiness.json().checks.warmUp).toBe('overran');
    expect(lines.some((line) => line.includes('after its deadline of 200 ms: ready anyway'))).toBe(true);
    release();
    // close() waits for the warm-up's clean-up.
    await service.close();
    expect(await counts(db)).toEqual(baseline);
  });

  it('becomes ready anyway when it fails, saying why', async () => {
    const { db, lines, start } = await fresh();
    const { db: held, fail } = gated(db);
    fail(new Error('the disk is full'));
    const service = await start({ db: held });
    const outcome = await service.warmedUp;
    expect(outcome).toMatchObject({ state: 'failed', error: 'the disk is full' });
    expect((await api(service.url, undefined, 'GET', '/readyz')).json().checks.warmUp).toBe('failed');
    expect(lines.some((line) => line.includes('warm-up failed') && line.includes('the disk is full'))).toBe(
      true,
    );
  });

  it('is skipped with warmUp: false: ready at once, checks.warmUp "off"', async () => {
    const { lines, start } = await fresh();
    const service = await start({ warmUp: false });
    expect(await service.warmedUp).toMatchObject({ state: 'off' });
    const readiness = await api(service.url, undefined, 'GET', '/readyz');
    expect(readiness.status).toBe(200);
    expect(readiness.json().checks.warmUp).toBe('off');
    expect(lines.some((line) => line.includes('warm-up'))).toBe(false);
  });

  it('serve warms up by default and not with --no-warm-up', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcs-warmup-cli-'));
    try {
      for (const [args, expected] of [
        [[], 'ok'],
        [['--no-warm-up'], 'off'],
      ] as const) {
        const serve = await startServe({ cwd: dir, args: ['--log-format', 'json', ...args] });
        try {
          const readiness = await api(serve.url, undefined, 'GET', '/readyz');
          expect(readiness.json().checks.warmUp).toBe(expected);
          expect(serve.output().includes('"event":"warmup.done"')).toBe(expected === 'ok');
        } finally {
          await serve.stop();
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
