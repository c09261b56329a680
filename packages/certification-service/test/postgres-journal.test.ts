import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openPostgres } from '../src/index.js';
import { type InProcessService, inProcessService } from './support/in-process.js';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';
import { admin, api, bin, type CreatedRun, runCommand, runToken, startServe } from './support/service.js';

// PostgreSQL served by one instance with a journal directory: its calls are answered once written to
// the journal file, as on the embedded store, and the serving lock keeps every other serving instance
// out (and it out while others serve).

let postgres: ThrowawayPostgres;
let dir: string;
beforeAll(async () => {
  postgres = await startPostgres();
  dir = mkdtempSync(join(tmpdir(), 'pcs-pg-journal-'));
});
afterAll(async () => {
  await postgres?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** An error as `CODE: message`, to match both at once. */
const described = (error: { code?: string; message: string }) => `${error.code}: ${error.message}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const refusal = (opening: Promise<Database>) =>
  opening.then(async (db) => {
    await db.close();
    return 'opened';
  }, described);

describe('the serving lock', () => {
  it('keeps a second instance out while one serves with a journal, and one with a journal out while others serve; admin needs none', async () => {
    const url = await postgres.database('serving_lock');
    const alone = await openPostgres(url, { journalDir: join(dir, 'a') });
    expect(alone.exclusive).toBe(true);
    expect(alone.journalDir).toBe(join(dir, 'a'));
    expect(await refusal(openPostgres(url, { journalDir: join(dir, 'b') }))).toMatch(
      /^ERR_STORAGE_IN_USE: .*served by one instance with a journal directory/,
    );
    expect(await refusal(openPostgres(url, { serving: true }))).toMatch(
      /^ERR_STORAGE_IN_USE: .*served by one instance with a journal directory, which must be the only one/,
    );
    // The lock is the database's: another database of the same server is served apart, and what
    // refuses an instance there is said of that database's holders only.
    const other = await postgres.database('serving_lock_other');
    const elsewhere = await openPostgres(other, { serving: true });
    expect(await refusal(openPostgres(other, { journalDir: join(dir, 'c') }))).toMatch(
      /^ERR_STORAGE_IN_USE: .*served by other instances/,
    );
    await elsewhere.close();
    // An admin command (no lock) works beside it.
    const admin = await openPostgres(url);
    expect(admin.exclusive).toBe(false);
    expect(await admin.query<{ one: number }>('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    await admin.close();
    await alone.close();

    // Released at close: instances that share the database start, as many as wanted, and then keep
    // one with a journal out.
    const shared = [await openPostgres(url, { serving: true }), await openPostgres(url, { serving: true })];
    expect(shared.map((db) => db.exclusive)).toEqual([false, false]);
    expect(shared[0]!.journalDir).toBeUndefined();
    expect(await refusal(openPostgres(url, { journalDir: join(dir, 'a') }))).toMatch(
      /^ERR_STORAGE_IN_USE: .*served by other instances: an instance with a journal directory must be the only one/,
    );
    await shared[0]!.close();
    // Still one sharing instance.
    expect(await refusal(openPostgres(url, { journalDir: join(dir, 'a') }))).toMatch(/ERR_STORAGE_IN_USE/);
    await shared[1]!.close();
    expect(await refusal(openPostgres(url, { journalDir: join(dir, 'a') }))).toBe('opened');
  });

  it('refuses statements while its lock is lost, takes it again when it is free, and never while another instance holds it', async () => {
    const url = await postgres.database('lock_lost');
    const first = await openPostgres(url, { journalDir: join(dir, 'first') });
    const terminator = new pg.Client({ connectionString: url });
    await terminator.connect();
    const lockHolders = async () =>
      (
        await terminator.query<{ pid: number }>(
          "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()",
        )
      ).rows.map((row) => row.pid);
    try {
      expect(await first.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
      // The connection holding the lock is cut (as a server restart or a broken network would).
      const [holder] = await lockHolders();
      await terminator.query('SELECT pg_terminate_backend($1)', [holder]);
      // The driver learns it from the server a moment later.
      let lost = 'answered';
      for (let i = 0; i < 50 && lost === 'answered'; i += 1) {
        await sleep(20);
        lost = await first.query('SELECT 1').then(() => 'answered', described);
      }
      expect(lost).toMatch(/^ERR_STORAGE_UNAVAILABLE: .*serving lock was lost/);
      // Another instance takes the free lock first: the first stays refused, however long it retries.
      const second = await openPostgres(url, { journalDir: join(dir, 'second') });
      await sleep(2500);
      await expect(first.query('SELECT 1')).rejects.toMatchObject({ code: 'ERR_STORAGE_UNAVAILABLE' });
      expect(await second.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
      await second.close();
      // Free again: the first takes it back by itself and serves.
      const deadline = Date.now() + 10_000;
      let answer: unknown;
      while (Date.now() < deadline) {
        answer = await first.query('SELECT 1 AS one').catch(() => undefined);
        if (answer) break;
        await sleep(200);
      }
      expect(answer).toEqual([{ one: 1 }]);
      expect(await lockHolders()).toHaveLength(1);
    } finally {
      await terminator.end();
      await first.close();
    }
  });
});

describe('serve --journal-dir', () => {
  it('refuses a second serve (exit 3, saying why) while it runs, lets admin run beside it, and says where its journal is', {
    timeout: 120_000,
  }, async () => {
    const env = { DATABASE_URL: await postgres.database('serve_journal') };
    const journal = join(dir, 'serve-journal');
    const service = await startServe({ cwd: dir, env, args: ['--journal-dir', journal] });
    try {
      // Its start-up line (JSON, as not on a terminal) names the journal directory.
      expect(service.output()).toContain(`"journalDir":${JSON.stringify(journal)}`);
      const second = await runCommand(process.execPath, [bin, 'serve', '--port', '0'], {
        cwd: dir,
        env: { ...env, SIGNING_KEY_FILE: '' },
        timeoutMs: 60_000,
      });
      expect(second.code).toBe(3);
      expect(second.stderr).toMatch(
        /is served by one instance with a journal directory, which must be the only one/,
      );
      expect(second.stderr).not.toContain('postgres://');
      const { apiKey } = await admin('add-partner', 'Beside Co', { cwd: dir, env });
      expect((await api(service.url, apiKey, 'GET', '/api/runs')).status).toBe(200);
    } finally {
      expect(await service.stop()).toBe(0);
    }
    // Stopped: its lock is free, and an instance without a journal starts. Signalled as soon as its
    // start-up line is read, it still stops cleanly (exit 0, not killed by the signal).
    const shared = await startServe({ cwd: dir, env });
    expect(await shared.stop()).toBe(0);
  });
});

describe('one instance with a journal directory, PostgreSQL stopped', () => {
  let alone: InProcessService;
  let shared: InProcessService;
  let journalDir: string;
  beforeAll(async () => {
    journalDir = join(dir, 'service-journal');
    alone = await inProcessService({
      db: await openPostgres(await postgres.database('alone'), { journalDir }),
      tokenDelayMs: 0,
      apiDelayMs: 0,
    });
    // The control: instances that share their database wait for its commit.
    shared = await inProcessService({
      db: await openPostgres(await postgres.database('shared'), { serving: true }),
      tokenDelayMs: 0,
      apiDelayMs: 0,
    });
  });
  afterAll(async () => {
    await alone?.close();
    await shared?.close();
    await alone?.db.close();
    await shared?.db.close();
  });

  it("answers an open run's calls from the journal while the database is stopped, and records every one once it is back (control: sharing, 503)", {
    timeout: 120_000,
  }, async () => {
    const open = async (instance: InProcessService) => {
      const { apiKey } = await instance.partner('Journal Co');
      const run = (
        await api(instance.service.url, apiKey, 'POST', '/api/runs', { scenarios: [], ttlSeconds: 3600 })
      ).json() as CreatedRun;
      const token = await (await runToken(run, { scope: 'read:loans' })).json();
      const call = () =>
        fetch(`${run.baseUrl}/v3/partner/${token.partnerId}/loans?limit=5`, {
          headers: { authorization: `Bearer ${token.access_token}` },
        });
      expect((await call()).status).toBe(200);
      return { apiKey, run, call };
    };
    const mine = await open(alone);
    const theirs = await open(shared);

    await postgres.halt();
    const statuses: number[] = [];
    let controlStatus: number;
    let readiness: number;
    try {
      for (let i = 0; i < 20; i += 1) {
        const answer = await mine.call();
        await answer.arrayBuffer();
        statuses.push(answer.status);
      }
      statuses.push((await runToken(mine.run, { scope: 'read:loans' })).status);
      const control = await theirs.call();
      controlStatus = control.status;
      readiness = (await fetch(`${alone.service.url}/readyz`)).status;
      // Written, and not in the database yet.
      expect(readdirSync(journalDir).length).toBeGreaterThan(0);
    } finally {
      await postgres.resume();
    }
    expect(statuses).toEqual(Array(21).fill(200));
    expect(controlStatus).toBe(503);
    expect(readiness).toBe(503);

    // Back: the lock is taken again and the journal drained; the finish waits for every call answered.
    const url = alone.service.url;
    let finished: Awaited<ReturnType<typeof api>> | undefined;
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      finished = await api(url, mine.apiKey, 'POST', `/api/runs/${mine.run.id}/finish`, {});
      if (finished.status === 200) break;
      await sleep(500);
    }
    expect(finished?.status).toBe(200);
    const session = (await api(url, mine.apiKey, 'GET', `/api/runs/${mine.run.id}/session`)).json();
    const answered = session.exchanges.filter((exchange: { status: number }) => exchange.status === 200);
    // Before the stop: a token and a call; during it: 20 calls and a token.
    expect(answered.length).toBe(2 + 21);
    expect(session.exchanges.map((exchange: { seq: number }) => exchange.seq)).toEqual(
      session.exchanges.map((_: unknown, index: number) => index + 1),
    );
    expect(session.tokens.length).toBe(2);
  });
});
