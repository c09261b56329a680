import { batched } from '../db/batched.js';
import type { Database } from '../db/database.js';
import type { ExchangeEntry } from './journal-file.js';
import { dataError, maxBytes, maxItems, rankByRun, storeExchanges } from './store.js';

/**
 * The statements every call of every run makes where the database is written at once (no journal file):
 * numbering the call, recording it, storing the tokens the run's stage issues and revokes, and playing
 * its scenarios where instances share the database. Each is grouped (see `batched`): under load, one
 * statement numbers or records the calls of many runs at once; a call alone goes out at once.
 */
export function sharedStatements(db: Database) {
  return {
    number: numberCalls(db),
    record: recordCalls(db),
    issue: issueTokens(db),
    revoke: revokeTokens(db),
    play: playStates(db),
  };
}

/** Numbers the calls of open runs (where instances share the database: a call may reach any of them). */
function numberCalls(db: Database) {
  return batched<string, number | undefined>(
    async (ids) => {
      const wanted = new Map<string, number>();
      for (const id of ids) wanted.set(id, (wanted.get(id) ?? 0) + 1);
      // Rows are locked in id order, so that two instances numbering the same runs never deadlock. The
      // commit does not wait for the disk: a number matters once its call is recorded, and recording
      // (which waits) flushes it too, or keeps the run's number past it (`greatest` below).
      const rows = await db.queryUnflushed<{ id: string; seq: number }>(
        `WITH locked AS (SELECT id FROM runs WHERE id = ANY($1) AND status = 'open' AND expires_at > now() ORDER BY id FOR NO KEY UPDATE)
       UPDATE runs r SET seq = r.seq + ($2::int[])[array_position($1::text[], r.id)], last_activity_at = now()
       FROM locked WHERE r.id = locked.id
       RETURNING r.id, r.seq`,
        [[...wanted.keys()], [...wanted.values()]],
        { prepare: true },
      );
      // The last number each run got; its callers take the numbers before it, in arrival order.
      const next = new Map(rows.map((row) => [row.id, row.seq - wanted.get(row.id)! + 1]));
      return ids.map((id) => {
        const seq = next.get(id);
        if (seq !== undefined) next.set(id, seq + 1);
        return seq;
      });
    },
    { maxItems, alone: dataError, name: 'number' },
  );
}

/**
 * Batches of records (and of tokens issued) in flight at once on PostgreSQL (see `batched`'s
 * `inFlight`): a call answered only once its exchange is committed, so that another instance can take the
 * run over, then waits for one commit, not for the rest of the one before it. Three of the main pool's
 * connections (ten by default); the embedded database runs one statement at a time whatever.
 */
export const recordsInFlight = 3;

/**
 * `recordsInFlight` where instances share PostgreSQL; one batch at a time elsewhere: where one instance
 * owns the database, a record may carry the run's scenario state (the latest of its batch), which a
 * batch committing after a later one would set back.
 */
const inFlightOn = (db: Database) => (db.kind === 'postgres' && !db.exclusive ? recordsInFlight : 1);

/** Records exchanges of open runs; true for each whose run is open. */
function recordCalls(db: Database) {
  return batched<ExchangeEntry, boolean>(
    async (items) => {
      const open = await storeExchanges(db, items, true);
      return items.map((item) => open.has(item.runId));
    },
    {
      maxItems,
      maxWeight: maxBytes,
      weigh: (item) => item.exchange.length,
      alone: dataError,
      name: 'record',
      inFlight: inFlightOn(db),
    },
  );
}

/** Stores the tokens runs' stages issue, by hash, each with its run's next token number. */
function issueTokens(db: Database) {
  return batched<{ runId: string; sha256: string; token: string }, number | undefined>(
    async (items) => {
      const { counts, ranks } = rankByRun(items);
      // One statement: each open run's token count moves on by its tokens in the batch, and each token
      // is stored by hash with its number and reference (`T1`, `T2`, …), listed in the session while the
      // run keeps exchanges.
      // Runs are locked in id order, as `record` does, so that the two never deadlock. The commit does not
      // wait for the disk: a token's answer leaves only after its call's record, whose commit (which
      // waits) flushes this one too (PostgreSQL writes its log in order); and the run's row is then held
      // locked the time of the statement, not of a flush, so the run's other calls do not queue behind
      // it. A token lost with its server never reached the client.
      const rows = await db.queryUnflushed<{ id: string; base: number }>(
        `WITH open AS (
           SELECT id FROM runs WHERE id = ANY($1) AND status = 'open' AND expires_at > now() ORDER BY id FOR NO KEY UPDATE),
         counted AS (
           UPDATE runs r SET token_count = r.token_count + w.n
           FROM open o JOIN unnest($1::text[], $2::int[]) AS w(id, n) ON w.id = o.id
           WHERE r.id = o.id
           RETURNING r.id, r.token_count - w.n AS base, r.recorded < r.max_exchanges AS listed),
         kept AS (
           INSERT INTO run_tokens (run_id, value_sha256, number, listed, token)
           SELECT i.run_id, i.sha, c.base + i.rank, c.listed,
             i.token || jsonb_build_object('ref', 'T' || (c.base + i.rank))
           FROM unnest($3::text[], $4::text[], $5::int[], $6::jsonb[]) AS i(run_id, sha, rank, token)
           JOIN counted c ON c.id = i.run_id)
       SELECT id, base FROM counted`,
        [
          [...counts.keys()],
          [...counts.values()],
          items.map((item) => item.runId),
          items.map((item) => item.sha256),
          ranks,
          items.map((item) => item.token),
        ],
        { prepare: true },
      );
      const bases = new Map(rows.map((row) => [row.id, Number(row.base)]));
      return items.map((item, index) => {
        const base = bases.get(item.runId);
        return base === undefined ? undefined : base + ranks[index]!;
      });
    },
    { maxItems, alone: dataError, name: 'issue', inFlight: inFlightOn(db) },
  );
}

/** Writes the tokens runs' plans revoked while the runs are open. */
function revokeTokens(db: Database) {
  return batched<{ runId: string; number: number; token: string }, void>(
    async (items) => {
      await db.query(
        `UPDATE run_tokens t SET token = w.token
       FROM unnest($1::text[], $2::int[], $3::jsonb[]) AS w(run_id, number, token), runs r
       WHERE t.run_id = w.run_id AND t.number = w.number AND r.id = w.run_id AND r.status = 'open'`,
        [items.map((item) => item.runId), items.map((item) => item.number), items.map((item) => item.token)],
        { prepare: true },
      );
      return items.map(() => undefined);
    },
    { maxItems, alone: dataError, name: 'revoke' },
  );
}

/**
 * Writes runs' scenario states over the states they were played on (see `Journal.play`), with the token
 * a call revoked in the same statement.
 */
function playStates(db: Database) {
  return batched<
    { runId: string; before: string; after: string; number: number | null; token: string | null },
    boolean
  >(
    async (all) => {
      // One item per run: each instance plays a run's calls one at a time, so a second is not expected;
      // one would find the row changed by the first (false: it is played again). Rows are locked in
      // id order, as the other batches lock them, so that they never deadlock; a row another statement
      // changed while this one waited is compared again as it is now (PostgreSQL rechecks a locked
      // row's conditions on its latest version).
      // The state has a row of its own (`run_scenarios`), locked for the write; the run's row is only
      // key-shared, which the numbers', records' and tokens' `FOR NO KEY UPDATE` do not wait for, nor
      // this for them: a play never queues behind a record's commit. Judging's claim locks the run's row
      // `FOR UPDATE`, so that no play is written once the run is closing.
      const firsts = new Set<string>();
      const items = all.filter((item) => !firsts.has(item.runId) && firsts.add(item.runId));
      const rows = await db.queryUnflushed<{ id: string }>(
        `WITH w AS (
           SELECT * FROM unnest($1::text[], $2::jsonb[], $3::jsonb[], $4::int[], $5::jsonb[])
             AS w(id, before, after, number, token)),
         locked AS (
           SELECT r.id FROM runs r JOIN w ON w.id = r.id JOIN run_scenarios s ON s.run_id = r.id
           WHERE r.status = 'open' AND r.expires_at > now() AND s.state = w.before
           ORDER BY r.id FOR UPDATE OF s FOR KEY SHARE OF r),
         changed AS (
           UPDATE run_scenarios s SET state = w.after
           FROM locked l JOIN w ON w.id = l.id
           WHERE s.run_id = l.id AND s.state = w.before
           RETURNING s.run_id AS id),
         revoked AS (
           UPDATE run_tokens t SET token = w.token
           FROM changed c JOIN w ON w.id = c.id
           WHERE w.number IS NOT NULL AND t.run_id = w.id AND t.number = w.number)
       SELECT id FROM changed`,
        [
          items.map((item) => item.runId),
          items.map((item) => item.before),
          items.map((item) => item.after),
          items.map((item) => item.number),
          items.map((item) => item.token),
        ],
        { prepare: true },
      );
      const written = new Set(rows.map((row) => row.id));
      return all.map((item) => items.includes(item) && written.has(item.runId));
    },
    // Several at once, as records: a run has one play in flight at most (each instance plays a run's
    // calls one at a time), so batches in flight together never hold the same row, and a batch waits for
    // the locks of its own runs only, not behind another batch's.
    { maxItems, alone: dataError, name: 'play', inFlight: inFlightOn(db) },
  );
}
