import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/index.js';
import { openJournal } from '../src/recording/journal.js';
import { storeExchanges } from '../src/recording/store.js';
import { inProcessService } from './support/in-process.js';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';
import { api, type CreatedRun } from './support/service.js';

// Where instances share PostgreSQL, a call is answered once its record is committed and on disk; a
// token the stage issues is stored with a commit that does not wait for the disk, and made durable by
// its call's record, committed after it (recording/statements.ts). Proven by crashes of the server:
// every process SIGKILLed at once, the server started again from its files. The WAL writer is told to
// sleep 10 s, so that a commit nothing flushed is still in the server's memory at the crash, and lost
// with it: the control shows the crash loses such a commit, so what survives it was flushed.
let postgres: ThrowawayPostgres;
let databaseUrl: string;
let runId: string;
beforeAll(async () => {
  postgres = await startPostgres({ settings: { wal_writer_delay: '10000ms' } });
  databaseUrl = await postgres.database('durability');
  const svc = await inProcessService({ databaseUrl });
  try {
    const { apiKey } = await svc.partner('Durability');
    const created = await api(svc.service.url, apiKey, 'POST', '/api/runs', {});
    expect(created.status).toBe(201);
    runId = (created.json() as CreatedRun).id;
  } finally {
    // Nothing of the service's own (its sweeps, its commits) runs during the crashes below.
    await svc.close();
  }
}, 60_000);
afterAll(async () => {
  await postgres?.stop();
});

const exchange = (seq: number) => JSON.stringify({ seq, server: 'api', method: 'GET', status: 200 });

describe('a recorded call outlives a crash of PostgreSQL shared by instances', () => {
  it('every call the journal said was recorded, and the token issued before it, is there after the crash; a commit left unflushed is not (control)', async () => {
    const kept: number[] = [];
    const tokens: number[] = [];
    for (const round of [0, 1]) {
      const db = await openDatabase({ databaseUrl, dataDir: '' });
      const journal = openJournal(db);
      expect(journal.exclusive).toBe(false);
      const first = 3 * round + 1;
      // A token issued (its commit not waiting for the disk), then its call and two more recorded.
      const number = await journal.issue(runId, `${round}`.repeat(64), JSON.stringify({ seq: first }), 0);
      expect(number).toBe(round + 1);
      tokens.push(round + 1);
      // Three calls recorded (one batch of two, then one alone): each told recorded once durable.
      const recorded = await Promise.all([
        journal.record(runId, first, exchange(first)),
        journal.record(runId, first + 1, exchange(first + 1)),
      ]);
      recorded.push(await journal.record(runId, first + 2, exchange(first + 2)));
      expect(recorded).toEqual([true, true, true]);
      kept.push(first, first + 1, first + 2);
      // Control: the same statement committed without the flush after it, then the crash at once.
      const unflushed = await storeExchanges(
        { query: db.queryUnflushed },
        [{ runId, seq: 100 + round, exchange: exchange(100 + round) }],
        true,
      );
      expect(unflushed.has(runId)).toBe(true);
      await postgres.crash();
      await db.close().catch(() => {});
      await postgres.resume();
      const after = await openDatabase({ databaseUrl, dataDir: '' });
      try {
        const rows = await after.query<{ seq: number }>(
          'SELECT seq FROM exchanges WHERE run_id = $1 ORDER BY seq',
          [runId],
        );
        expect(rows.map((row) => row.seq)).toEqual(kept);
        const stored = await after.query<{ number: number }>(
          'SELECT number FROM run_tokens WHERE run_id = $1 ORDER BY number',
          [runId],
        );
        expect(stored.map((row) => row.number)).toEqual(tokens);
      } finally {
        await after.close();
      }
    }
  }, 120_000);
});
