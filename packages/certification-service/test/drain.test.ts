import { appendFileSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StorageUnavailableError } from '../src/errors.js';
import type { Database } from '../src/index.js';
import { JournalFileDrain } from '../src/recording/drain.js';
import { openJournal } from '../src/recording/journal.js';
import { type JournalFile, openJournalFile, parseJournalFile } from '../src/recording/journal-file.js';
import { databaseLedger } from '../src/recording/ledger.js';
import { replayJournal } from '../src/recording/replay.js';
import { type InProcessService, inProcessService } from './support/in-process.js';
import { api, type CreatedRun, runToken } from './support/service.js';

// The embedded store's journal file: a call is answered once its exchange is written there, the
// database is filled from it in the background, and what a killed process had not committed is
// replayed by the next start. Each test has a journal of its own, in a directory of its own, on the
// same embedded database (a run's rows are the service's).
let svc: InProcessService;
let apiKey: string;
beforeAll(async () => {
  svc = await inProcessService({ limits: { maxOpenRunsPerPartner: 50, maxRunsPerHour: 100 } });
  ({ apiKey } = await svc.partner('Journal file'));
}, 60_000);
afterAll(async () => {
  await svc?.close();
});

const exchange = (seq: number) => JSON.stringify({ seq, server: 'api', method: 'GET', status: 200 });
const newRun = async () => {
  const created = await api(svc.service.url, apiKey, 'POST', '/api/runs', {});
  expect(created.status).toBe(201);
  return (created.json() as CreatedRun).id;
};
const stored = async (db: Database, id: string) => {
  const [run] = await db.query<{ recorded: number; seq: number }>(
    'SELECT recorded, seq FROM runs WHERE id = $1',
    [id],
  );
  const rows = await db.query<{ seq: number }>('SELECT seq FROM exchanges WHERE run_id = $1 ORDER BY seq', [
    id,
  ]);
  return { recorded: run!.recorded, seq: run!.seq, seqs: rows.map((row) => row.seq) };
};
const journalDirectory = () => mkdtempSync(join(tmpdir(), 'pcs-journal-'));
/** The test's database with `query` in place of its own (to count, hold or interleave statements). */
const withQuery = (query: (text: string, params?: unknown[]) => Promise<unknown[]>): Database =>
  Object.assign(Object.create(svc.db) as Database, { query: query as Database['query'] });
const lines = (dir: string) =>
  readdirSync(dir)
    .sort()
    .flatMap((name) => parseJournalFile(readFileSync(join(dir, name), 'utf8')));
const hour = () => Date.now() + 3_600_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits until `dir` holds what a process killed now would leave: its segment and the next one, which
 * the journal opens ahead on libuv's pool. Replaying before that one exists would leave it to appear
 * after the replay, which a new process (the old one dead) never sees.
 */
async function asLeftByAKill(dir: string): Promise<void> {
  for (let wait = 0; wait < 200 && readdirSync(dir).length < 2; wait += 1) await sleep(10);
  expect(readdirSync(dir)).toHaveLength(2);
}

describe('the journal file of the embedded store', () => {
  it('answers a call once it is written to the file, before the database has it; a restart replays it once', async () => {
    const id = await newRun();
    const dir = journalDirectory();
    // A drain far away: as if the process were killed before it ran.
    const journal = openJournal(svc.db, { journalDir: dir, drainMs: 3_600_000 });
    journal.track(id, hour());
    const answered = await Promise.all([1, 2, 3, 4, 5].map((seq) => journal.record(id, seq, exchange(seq))));
    expect(answered).toEqual([true, true, true, true, true]);
    // Not in the database yet (so the answer did not wait for it), all in the file.
    expect((await stored(svc.db, id)).seqs).toEqual([]);
    expect(lines(dir).map((entry) => [entry.runId, entry.kind === undefined && entry.seq])).toEqual(
      [1, 2, 3, 4, 5].map((seq) => [id, seq]),
    );
    // The next start replays it: every call, counted once, the run's number after the highest.
    await asLeftByAKill(dir);
    expect(await replayJournal(svc.db, dir)).toBe(5);
    expect(await stored(svc.db, id)).toEqual({ recorded: 5, seq: 5, seqs: [1, 2, 3, 4, 5] });
    expect(readdirSync(dir)).toEqual([]);
    // Replaying what is already in (killed after a commit, before the file was deleted) adds nothing.
    const again = journalDirectory();
    const second = openJournal(svc.db, { journalDir: again, drainMs: 3_600_000 });
    second.track(id, hour());
    await second.record(id, 3, exchange(3));
    await second.record(id, 6, exchange(6));
    expect(await replayJournal(svc.db, again)).toBe(1);
    expect(await stored(svc.db, id)).toEqual({ recorded: 6, seq: 6, seqs: [1, 2, 3, 4, 5, 6] });
  });

  it('skips a torn last line (a write cut by the kill: never answered) and keeps the rest', async () => {
    const id = await newRun();
    const dir = journalDirectory();
    const journal = openJournal(svc.db, { journalDir: dir, drainMs: 3_600_000 });
    journal.track(id, hour());
    await journal.record(id, 1, exchange(1));
    await journal.record(id, 2, exchange(2));
    const [segment] = readdirSync(dir);
    appendFileSync(join(dir, segment!), `${JSON.stringify([id, 3, null])}\t{"seq":3,"server":"a`);
    expect(await replayJournal(svc.db, dir)).toBe(2);
    expect((await stored(svc.db, id)).seqs).toEqual([1, 2]);
  });

  it('replays past an entry it cannot store (its run is not there): that one is left out and said, the others kept', async () => {
    const id = await newRun();
    const dir = journalDirectory();
    const journal = openJournal(svc.db, { journalDir: dir, drainMs: 3_600_000 });
    journal.track(id, hour());
    journal.track('run_gone', hour());
    await journal.record(id, 1, exchange(1));
    await journal.record('run_gone', 1, exchange(1));
    await journal.record(id, 2, exchange(2));
    await asLeftByAKill(dir);
    const logged: string[] = [];
    expect(await replayJournal(svc.db, dir, (line) => logged.push(line))).toBe(2);
    expect((await stored(svc.db, id)).seqs).toEqual([1, 2]);
    expect(
      logged.some((line) => line.startsWith('run run_gone: call 1 from the journal file cannot be stored')),
    ).toBe(true);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('fills the database in the background, and deletes what it committed', async () => {
    const id = await newRun();
    const dir = journalDirectory();
    const journal = openJournal(svc.db, { journalDir: dir, drainMs: 10 });
    journal.track(id, hour());
    for (let seq = 1; seq <= 40; seq += 1) expect(await journal.record(id, seq, exchange(seq))).toBe(true);
    for (let wait = 0; wait < 100 && (await stored(svc.db, id)).recorded < 40; wait += 1) await sleep(50);
    expect((await stored(svc.db, id)).seqs).toEqual(Array.from({ length: 40 }, (_, index) => index + 1));
    await journal.close();
    expect(lines(dir)).toEqual([]);
  });

  it('records nothing for a run it does not track, past its deadline, or once judging settles it; settling waits for every call answered', async () => {
    const [id, late, untracked] = [await newRun(), await newRun(), await newRun()];
    const dir = journalDirectory();
    const journal = openJournal(svc.db, { journalDir: dir, drainMs: 3_600_000 });
    journal.track(id, hour());
    journal.track(late, Date.now() - 1);
    expect(await journal.record(untracked, 1, exchange(1))).toBe(false);
    expect(await journal.record(late, 1, exchange(1))).toBe(false);
    expect(await journal.record(id, 1, exchange(1))).toBe(true);
    expect(await journal.record(id, 2, exchange(2))).toBe(true);
    expect((await stored(svc.db, id)).seqs).toEqual([]);
    await journal.settle(id);
    // Settled: every call answered is in, and a call after it is refused (never answered unrecorded).
    expect((await stored(svc.db, id)).seqs).toEqual([1, 2]);
    expect(await journal.record(id, 3, exchange(3))).toBe(false);
    expect(lines(dir)).toEqual([]);
    for (const other of [late, untracked]) expect((await stored(svc.db, other)).seqs).toEqual([]);
    await journal.close();
  });

  it('writes the calls of one turn of the event loop in one write, each answered only once it is in the file; a failed write answers none', async () => {
    const id = await newRun();
    const dir = journalDirectory();
    const file = openJournalFile(dir);
    const appends: number[] = [];
    let failing = false;
    const counted: JournalFile = Object.assign(Object.create(file) as JournalFile, {
      append(entries: Parameters<JournalFile['append']>[0]) {
        if (failing) throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
        appends.push(entries.length);
        file.append(entries);
      },
    });
    const drain = new JournalFileDrain(svc.db, counted, { drainMs: 3_600_000 });
    drain.track(id, hour());
    const item = (seq: number) => ({ runId: id, seq, exchange: exchange(seq) });
    // Each call, as it is told it is written, finds itself in the file already.
    const inFileWhenAnswered = (seq: number) =>
      drain
        .write(item(seq))
        .then((kept) => kept && lines(dir).some((entry) => 'seq' in entry && entry.seq === seq));
    const burst = await Promise.all([1, 2, 3, 4, 5].map(inFileWhenAnswered));
    expect(burst).toEqual([true, true, true, true, true]);
    expect(appends).toEqual([5]);
    // Calls of later turns: a write each (not held for a burst that never comes).
    expect(await inFileWhenAnswered(6)).toBe(true);
    expect(await inFileWhenAnswered(7)).toBe(true);
    expect(appends).toEqual([5, 1, 1]);
    // A write that fails fails every call of its turn, and none of them is pending.
    failing = true;
    const failed = await Promise.allSettled([8, 9].map((seq) => drain.write(item(seq))));
    expect(failed.map((result) => result.status === 'rejected' && result.reason)).toEqual([
      expect.any(StorageUnavailableError),
      expect.any(StorageUnavailableError),
    ]);
    failing = false;
    // A settle in the same turn as a write still has that call (written first), and it is in the database.
    const last = drain.write(item(10));
    await drain.settle(id);
    expect(await last).toBe(true);
    expect((await stored(svc.db, id)).seqs).toEqual([1, 2, 3, 4, 5, 6, 7, 10]);
    await drain.close();
  });

  it('refuses calls (503) rather than holding more than maxPending in memory when the database does not take them', async () => {
    const id = await newRun();
    const journal = openJournal(svc.db, {
      journalDir: journalDirectory(),
      drainMs: 3_600_000,
      maxPending: 3,
    });
    journal.track(id, hour());
    for (const seq of [1, 2, 3]) expect(await journal.record(id, seq, exchange(seq))).toBe(true);
    await expect(journal.record(id, 4, exchange(4))).rejects.toBeInstanceOf(StorageUnavailableError);
    await journal.close();
    expect((await stored(svc.db, id)).seqs).toEqual([1, 2, 3]);
  });

  it('starts a drain in a pause between calls, not in a burst of them, and waits drainMs for a pause at most', async () => {
    /** Writes a call every 5 ms for `ms`: the times each was written. */
    const burst = async (journal: ReturnType<typeof openJournal>, id: string, ms: number, from = 1) => {
      const written: number[] = [];
      const until = performance.now() + ms;
      for (let seq = from; performance.now() < until; seq += 1) {
        expect(await journal.record(id, seq, exchange(seq))).toBe(true);
        written.push(performance.now());
        await sleep(5);
      }
      return written;
    };
    // When each statement started.
    let started: number[] = [];
    const timed = withQuery(async (text, params) => {
      started.push(performance.now());
      return svc.db.query(text, params);
    });

    // A burst that outlasts the first drain's time (400 ms): the drain starts after it, in the pause.
    const first = await newRun();
    let journal = openJournal(timed, { journalDir: journalDirectory(), drainMs: 400, quietMs: 200 });
    journal.track(first, hour());
    let written = await burst(journal, first, 550);
    for (let wait = 0; wait < 200 && started.length === 0; wait += 1) await sleep(10);
    expect(started.length).toBeGreaterThan(0);
    expect(started[0]).toBeGreaterThan(written.at(-1)!);
    for (let wait = 0; wait < 100 && (await stored(svc.db, first)).recorded < written.length; wait += 1)
      await sleep(20);
    expect((await stored(svc.db, first)).recorded).toBe(written.length);
    await journal.close();

    // Calls that never pause: the drain waits 300 ms (drainMs) for a pause, then starts in the burst.
    started = [];
    const second = await newRun();
    journal = openJournal(timed, { journalDir: journalDirectory(), drainMs: 300, quietMs: 200 });
    journal.track(second, hour());
    written = await burst(journal, second, 1500);
    expect(started.length).toBeGreaterThan(0);
    expect(started[0]).toBeLessThan(written.at(-1)!);
    await journal.close();
    expect((await stored(svc.db, second)).recorded).toBe(written.length);

    // A statement's worth written while one runs goes on in the same drain once the calls pause, not
    // in the middle of their burst.
    started = [];
    const third = await newRun();
    let opened: (() => void) | undefined;
    const gated = withQuery(async (text, params) => {
      started.push(performance.now());
      await new Promise<void>((resolve) => {
        opened = resolve;
      });
      return svc.db.query(text, params);
    });
    journal = openJournal(gated, {
      journalDir: journalDirectory(),
      drainMs: 50,
      drainItems: 4,
      quietMs: 200,
    });
    journal.track(third, hour());
    expect(await journal.record(third, 1, exchange(1))).toBe(true);
    for (let wait = 0; wait < 100 && started.length === 0; wait += 1) await sleep(10);
    expect(started).toHaveLength(1);
    for (let seq = 2; seq <= 5; seq += 1) expect(await journal.record(third, seq, exchange(seq))).toBe(true);
    opened!();
    written = await burst(journal, third, 150, 6);
    for (let wait = 0; wait < 100 && started.length < 2; wait += 1) await sleep(10);
    expect(started).toHaveLength(2);
    expect(started[1]).toBeGreaterThan(written.at(-1)!);
    const closing = journal.close();
    for (let wait = 0; wait < 200 && (await stored(svc.db, third)).recorded < 5 + written.length; wait += 1) {
      opened?.();
      await sleep(10);
    }
    opened?.();
    await closing;
    expect((await stored(svc.db, third)).recorded).toBe(5 + written.length);
  });

  it('keeps its statements full: calls written while one runs wait for the next drain, unless they fill a statement', async () => {
    for (const [during, goesOn] of [
      [2, false],
      [4, true],
    ] as const) {
      const id = await newRun();
      // Each statement waits for `opened` to be called, and is counted.
      let statements = 0;
      let opened: (() => void) | undefined;
      const gated = withQuery(async (text, params) => {
        statements += 1;
        await new Promise<void>((resolve) => {
          opened = resolve;
        });
        return svc.db.query(text, params);
      });
      const journal = openJournal(gated, { journalDir: journalDirectory(), drainMs: 400, drainItems: 4 });
      journal.track(id, hour());
      await journal.record(id, 1, exchange(1));
      for (let wait = 0; wait < 100 && statements === 0; wait += 1) await sleep(20);
      expect(statements).toBe(1);
      // Written while the first statement runs: fewer than a statement holds, or a full one.
      for (let seq = 2; seq <= 1 + during; seq += 1) await journal.record(id, seq, exchange(seq));
      opened!();
      for (let wait = 0; wait < 10 && statements < 2; wait += 1) await sleep(10);
      if (goesOn) {
        // A statement's worth goes on at once, in the same drain.
        expect(statements).toBe(2);
        opened!();
        for (let wait = 0; wait < 50 && (await stored(svc.db, id)).recorded < 5; wait += 1) await sleep(10);
        expect((await stored(svc.db, id)).seqs).toEqual([1, 2, 3, 4, 5]);
      } else {
        // Two calls wait for the next drain, 400 ms later: one statement so far.
        expect(statements).toBe(1);
        expect((await stored(svc.db, id)).seqs).toEqual([1]);
        for (let wait = 0; wait < 100 && statements < 2; wait += 1) await sleep(10);
        expect(statements).toBe(2);
        opened!();
        for (let wait = 0; wait < 50 && (await stored(svc.db, id)).recorded < 3; wait += 1) await sleep(10);
        expect((await stored(svc.db, id)).seqs).toEqual([1, 2, 3]);
      }
      const closing = journal.close();
      opened!();
      await closing;
    }
  });

  it("settles a run while other runs' calls keep coming, however few each statement leaves behind", async () => {
    const [judged, busy] = [await newRun(), await newRun()];
    let journal: ReturnType<typeof openJournal> | undefined;
    // While each of the first statements runs, two more calls of the busy run are written: fewer
    // than a statement holds, left behind each time.
    let statements = 0;
    let next = 0;
    const busyDb = withQuery(async (text, params) => {
      statements += 1;
      if (statements <= 4)
        for (let index = 0; index < 2; index += 1) {
          next += 1;
          await journal!.record(busy, next, exchange(next));
        }
      return svc.db.query(text, params);
    });
    journal = openJournal(busyDb, { journalDir: journalDirectory(), drainMs: 3_600_000, drainItems: 4 });
    journal.track(judged, hour());
    journal.track(busy, hour());
    for (let seq = 1; seq <= 3; seq += 1) await journal.record(judged, seq, exchange(seq));
    // Settling drains until nothing is left, rather than giving up after a few drains.
    await journal.settle(judged);
    expect((await stored(svc.db, judged)).seqs).toEqual([1, 2, 3]);
    expect((await stored(svc.db, busy)).seqs).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    await journal.close();
  });

  it('keeps what a failed statement carried (file and memory) and commits it once the database answers again, with nothing twice', async () => {
    const id = await newRun();
    let failing = 0;
    const flaky: Database = {
      ...svc.db,
      query: (text, params) => {
        if (failing > 0 && /INSERT INTO exchanges/.test(text)) {
          failing -= 1;
          return Promise.reject(Object.assign(new Error('connection lost'), { code: '08006' }));
        }
        return svc.db.query(text, params);
      },
    };
    const logged: string[] = [];
    const dir = journalDirectory();
    const journal = openJournal(flaky, {
      journalDir: dir,
      drainMs: 5,
      drainItems: 4,
      log: (line) => logged.push(line),
    });
    journal.track(id, hour());
    failing = 2;
    for (let seq = 1; seq <= 10; seq += 1) expect(await journal.record(id, seq, exchange(seq))).toBe(true);
    for (let wait = 0; wait < 200 && (await stored(svc.db, id)).recorded < 10; wait += 1) await sleep(25);
    expect(failing).toBe(0);
    expect(logged.some((line) => /failed \(1 in a row\), retrying/.test(line))).toBe(true);
    expect(await stored(svc.db, id)).toEqual({
      recorded: 10,
      seq: 10,
      seqs: Array.from({ length: 10 }, (_, index) => index + 1),
    });
    await journal.close();
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('tokens through the journal file', () => {
  const tokenJson = (n: number) => JSON.stringify({ issuedBy: n, scopes: ['read:loans'], expiresAt: 1 });
  const tokensOf = async (id: string) => {
    const [run] = await svc.db.query<{ token_count: number }>('SELECT token_count FROM runs WHERE id = $1', [
      id,
    ]);
    const rows = await svc.db.query<{ number: number; listed: boolean; token: Record<string, unknown> }>(
      'SELECT number, listed, token FROM run_tokens WHERE run_id = $1 ORDER BY number',
      [id],
    );
    return { count: run!.token_count, tokens: rows };
  };

  it('numbers a token in memory and answers once it is in the file; a revocation follows it there; a restart stores both once', async () => {
    const id = await newRun();
    const dir = journalDirectory();
    const journal = openJournal(svc.db, { journalDir: dir, drainMs: 3_600_000 });
    journal.track(id, hour());
    expect(await journal.issue(id, 'a'.repeat(64), tokenJson(1), 0)).toBe(1);
    expect(await journal.issue(id, 'b'.repeat(64), tokenJson(2), 0)).toBe(2);
    // Not in the database (the answer did not wait for it), in the file, and found by hash meanwhile.
    expect(await tokensOf(id)).toEqual({ count: 0, tokens: [] });
    expect(lines(dir).map((entry) => entry.kind)).toEqual(['issued', 'issued']);
    expect(JSON.parse(journal.pendingToken(id, 'a'.repeat(64))!)).toEqual({
      ...JSON.parse(tokenJson(1)),
      ref: 'T1',
    });
    expect(journal.pendingToken(id, 'c'.repeat(64))).toBeUndefined();
    expect(journal.pendingToken('run_other', 'a'.repeat(64))).toBeUndefined();
    const revoked = JSON.stringify({ ...JSON.parse(tokenJson(1)), ref: 'T1', revokedAt: 5 });
    await journal.revoke(id, 1, revoked);
    expect(JSON.parse(journal.pendingToken(id, 'a'.repeat(64))!).revokedAt).toBe(5);
    // Killed here: the next start stores both tokens, numbered, the revocation applied, the count on.
    expect(await replayJournal(svc.db, dir)).toBe(0);
    const after = await tokensOf(id);
    expect(after.count).toBe(2);
    expect(after.tokens.map((row) => [row.number, row.listed, row.token.ref, row.token.revokedAt])).toEqual([
      [1, true, 'T1', 5],
      [2, true, 'T2', undefined],
    ]);
    // Replayed again (killed after the commit, before the file was deleted): nothing twice, nothing undone.
    const again = journalDirectory();
    const second = openJournal(svc.db, { journalDir: again, drainMs: 3_600_000 });
    second.track(id, hour());
    // A stage opened on the run's row counts on from its token count.
    expect(await second.issue(id, 'a'.repeat(64), tokenJson(1), after.count)).toBe(3);
    expect(await replayJournal(svc.db, again)).toBe(0);
    expect((await tokensOf(id)).tokens.map((row) => [row.number, row.token.revokedAt])).toEqual([
      [1, 5],
      [2, undefined],
    ]);
  });

  it('refuses a token of a run it does not track or past its deadline, and settles tokens with the calls', async () => {
    const [id, late] = [await newRun(), await newRun()];
    const journal = openJournal(svc.db, { journalDir: journalDirectory(), drainMs: 3_600_000 });
    journal.track(id, hour());
    journal.track(late, Date.now() - 1);
    expect(await journal.issue(late, 'a'.repeat(64), tokenJson(1), 0)).toBeUndefined();
    expect(await journal.issue('run_untracked', 'a'.repeat(64), tokenJson(1), 0)).toBeUndefined();
    expect(await journal.issue(id, 'a'.repeat(64), tokenJson(1), 0)).toBe(1);
    await journal.settle(id);
    expect((await tokensOf(id)).tokens.map((row) => row.number)).toEqual([1]);
    // Committed: read from the database from now on, and a run settled takes no more.
    expect(journal.pendingToken(id, 'a'.repeat(64))).toBeUndefined();
    expect(await journal.issue(id, 'b'.repeat(64), tokenJson(2), 0)).toBeUndefined();
    await journal.close();
  });

  it('lists a token in the session only if its run had room for calls when it was issued, whatever the statements', async () => {
    for (const drainItems of [16, 1]) {
      const id = await newRun();
      await svc.db.query('UPDATE runs SET max_exchanges = 2 WHERE id = $1', [id]);
      const journal = openJournal(svc.db, { journalDir: journalDirectory(), drainMs: 3_600_000, drainItems });
      journal.track(id, hour());
      await journal.record(id, 1, exchange(1));
      await journal.issue(id, 'a'.repeat(64), tokenJson(1), 0);
      await journal.record(id, 2, exchange(2));
      // Issued once the run holds its 2 calls: not listed (its calls are not kept either).
      await journal.issue(id, 'b'.repeat(64), tokenJson(2), 0);
      await journal.record(id, 3, exchange(3));
      await journal.close();
      expect((await tokensOf(id)).tokens.map((row) => [row.number, row.listed])).toEqual([
        [1, true],
        [2, false],
      ]);
      expect((await stored(svc.db, id)).seqs).toEqual([1, 2]);
    }
  });

  it('answers a token while the database does not answer (control: without the file it waits)', async () => {
    const id = await newRun();
    let stalled = true;
    const waiting: (() => void)[] = [];
    // Every statement waits (a token issued straight to the database is one whose commit need not wait
    // for the disk).
    const stall = async () => {
      if (stalled) await new Promise<void>((resolve) => waiting.push(resolve));
    };
    const stalling: Database = {
      ...svc.db,
      query: async (text, params) => {
        await stall();
        return svc.db.query(text, params);
      },
      queryUnflushed: async (text, params) => {
        await stall();
        return svc.db.queryUnflushed(text, params);
      },
    };
    const timeout = (ms: number) => new Promise((resolve) => setTimeout(() => resolve('timed out'), ms));
    const file = openJournal(stalling, { journalDir: journalDirectory(), drainMs: 3_600_000 });
    file.track(id, hour());
    expect(await Promise.race([file.issue(id, 'a'.repeat(64), tokenJson(1), 0), timeout(1000)])).toBe(1);
    const direct = openJournal(stalling);
    const issued = direct.issue(id, 'b'.repeat(64), tokenJson(2), 0);
    expect(await Promise.race([issued, timeout(300)])).toBe('timed out');
    stalled = false;
    for (const resume of waiting) resume();
    // The database's own numbering counts what it holds (nothing yet: the file's token is not drained).
    expect(await issued).toBe(1);
    await file.close();
  });

  it('stores each exchange as written, whatever text it holds, many to a statement; refuses one not on one line', async () => {
    const id = await newRun();
    const dir = journalDirectory();
    // The statements it sends, counted.
    let statements = 0;
    const counted = withQuery((text, params) => {
      statements += 1;
      return svc.db.query(text, params);
    });
    const journal = openJournal(counted, { journalDir: dir, drainMs: 3_600_000 });
    journal.track(id, hour());
    // What a line of several exchanges, or an array parameter, could get wrong: quotes, backslashes,
    // braces, commas, a line break and a tab escaped in JSON, text beyond ASCII, an empty string.
    const texts = [
      'a "quoted", {braced} \\ text',
      'line\nbreak\ttab',
      'é ✓ 😀',
      '',
      ',',
      '}',
      '{"a":[1,2]}',
      'NULL',
    ];
    const written = Array.from({ length: 70 }, (_, index) =>
      JSON.stringify({
        seq: index + 1,
        body: texts[index % texts.length],
        list: [texts[(index + 1) % texts.length]],
      }),
    );
    for (const [index, text] of written.entries())
      expect(await journal.record(id, index + 1, text)).toBe(true);
    // More than one statement's worth (64 by default): two statements, none refused and sent again
    // item by item (which a statement that misread its text would be, for its data).
    await journal.settle(id);
    expect(statements).toBe(2);
    const rows = await svc.db.query<{ exchange: unknown }>(
      'SELECT exchange FROM exchanges WHERE run_id = $1 ORDER BY seq',
      [id],
    );
    expect(rows.map((row) => row.exchange)).toEqual(written.map((text) => JSON.parse(text)));
    // A line break would split the journal file's line and the statement's text: refused, never written.
    const other = await newRun();
    journal.track(other, hour());
    await expect(journal.record(other, 1, '{"seq":\n1}')).rejects.toThrow(/not JSON on one line/);
    expect(await journal.record(other, 2, exchange(2))).toBe(true);
    expect(lines(dir).map((entry) => entry.kind === undefined && entry.seq)).toEqual([2]);
    await journal.close();
    expect((await stored(svc.db, other)).seqs).toEqual([2]);
  });

  it("a run's stage finds a token still in the file, which the database does not hold yet (control: a journal without it)", async () => {
    const id = await newRun();
    const journal = openJournal(svc.db, { journalDir: journalDirectory(), drainMs: 3_600_000 });
    const run = { id, enabled: new Set<never>(), grant: ['read:loans'], seq: 0, expiresAt: hour() };
    const issuing = databaseLedger(svc.db, journal, run);
    const issued = await issuing.issue({
      value: 'token-value-1',
      token: JSON.parse(tokenJson(1)),
    } as Parameters<typeof issuing.issue>[0]);
    expect(issued.ref).toBe('T1');
    // Another ledger of the run (nothing cached): the database has no token, the file has it.
    expect((await tokensOf(id)).tokens).toEqual([]);
    const found = await databaseLedger(svc.db, journal, run).tokensByValue(['token-value-1']);
    expect(found.get('token-value-1')?.ref).toBe('T1');
    const elsewhere = openJournal(svc.db, { journalDir: journalDirectory(), drainMs: 3_600_000 });
    const missing = await databaseLedger(svc.db, elsewhere, run).tokensByValue(['token-value-1']);
    expect(missing.size).toBe(0);
    await journal.close();
    await elsewhere.close();
    // Drained: the database has it now.
    const drained = await databaseLedger(svc.db, openJournal(svc.db), run).tokensByValue(['token-value-1']);
    expect(drained.get('token-value-1')?.ref).toBe('T1');
  });
});

describe('the service on the embedded store', () => {
  it('judges a run on every call it answered, when the calls are still in the journal file at the finish', async () => {
    const created = (
      await api(svc.service.url, apiKey, 'POST', '/api/runs', { scenarios: [] })
    ).json() as CreatedRun;
    const token = await (await runToken(created, { scope: 'read:loans' })).json();
    const statuses = await Promise.all(
      Array.from({ length: 30 }, () =>
        fetch(`${created.baseUrl}/v3/partner/${token.partnerId}/loans?limit=5`, {
          headers: { authorization: `Bearer ${token.access_token}` },
        }).then((response) => response.status),
      ),
    );
    expect(statuses).toEqual(Array(30).fill(200));
    // Finished at once: the last calls are in the file, not yet in the database (the drain waits 200 ms).
    const finished = await api(svc.service.url, apiKey, 'POST', `/api/runs/${created.id}/finish`, {});
    expect(finished.status).toBe(200);
    const session = (await api(svc.service.url, apiKey, 'GET', `/api/runs/${created.id}/session`)).json();
    // The token request and the 30 calls, and the token, issued through the file too, listed.
    expect(session.exchanges).toHaveLength(31);
    expect(session.tokens.map((item: { ref: string }) => item.ref)).toEqual(['T1']);
  });
});
