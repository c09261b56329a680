import { batched } from '../db/batched.js';
import type { Database } from '../db/database.js';

/**
 * The statements every call of every run makes, shared by the runs an instance serves: numbering the
 * call and recording it. Each is grouped (see `batched`): under load, one statement numbers or records
 * the calls of many runs at once; a call alone goes out at once.
 *
 * Numbering is the database's when instances share it (PostgreSQL: a call may reach any of them). The
 * embedded store belongs to one process (its directory is locked), so there this instance numbers in
 * memory, from the highest number recorded, and a call costs one statement, not two.
 */
export interface RunJournal {
  /** True when this instance numbers in memory (it alone serves the database's runs). */
  readonly exclusive: boolean;
  /**
   * The next sequence number of an open run (1, 2, … in arrival order); undefined once it is not open.
   * `recorded` is the run's number as its row says (read when its stage opened): where this instance
   * numbers, it counts on from there.
   */
  nextSeq(runId: string, recorded: number): Promise<number | undefined>;
  /**
   * Records an exchange of an open run (kept up to the run's cap, counted past it), committed when this
   * resolves; false when the run is not open (judging has claimed it: the call must not be answered).
   */
  record(runId: string, seq: number, exchange: string): Promise<boolean>;
  /** The run's stage closed on this instance: its numbers are forgotten. */
  forget(runId: string): void;
}

/** Items per statement, and bytes of exchanges per statement (an exchange is at most a few hundred KiB). */
const maxItems = 256;
const maxBytes = 4 * 1024 * 1024;
/**
 * A statement refused for its data (SQLSTATE class 22, data exception, or 23, integrity constraint):
 * it may be one item's, so each goes again alone; one partner's call never fails another's.
 */
const dataError = (error: unknown) => /^2[23]/.test(String((error as { code?: unknown }).code ?? ''));

export function runJournal(db: Database): RunJournal {
  const exclusive = db.kind === 'embedded';
  /** Where this instance numbers: the last number given, by run. */
  const numbered = new Map<string, number>();
  const shared = batched<string, number | undefined>(
    async (ids) => {
      const wanted = new Map<string, number>();
      for (const id of ids) wanted.set(id, (wanted.get(id) ?? 0) + 1);
      // Rows are locked in id order, so that two instances numbering the same runs never deadlock. The
      // commit does not wait for the disk: a number matters once its call is recorded, and recording
      // (which waits) flushes it too, or keeps the run's number past it (`greatest` below).
      const rows = await db.queryUnflushed<{ id: string; seq: number }>(
        `WITH locked AS (SELECT id FROM runs WHERE id = ANY($1) AND status = 'open' ORDER BY id FOR UPDATE)
         UPDATE runs r SET seq = r.seq + ($2::int[])[array_position($1::text[], r.id)], last_activity_at = now()
         FROM locked WHERE r.id = locked.id
         RETURNING r.id, r.seq`,
        [[...wanted.keys()], [...wanted.values()]],
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

  const record = batched<{ runId: string; seq: number; exchange: string }, boolean>(
    async (items) => {
      // Each item's rank among its run's items in this batch (1, 2, … in arrival order).
      const counts = new Map<string, number>();
      const ranks = items.map((item) => {
        const rank = (counts.get(item.runId) ?? 0) + 1;
        counts.set(item.runId, rank);
        return rank;
      });
      // The highest number of each run's items (the run's `seq` never falls behind what it recorded).
      const highest = new Map<string, number>();
      for (const item of items) highest.set(item.runId, Math.max(highest.get(item.runId) ?? 0, item.seq));
      // One statement: lock the open runs (in id order), keep each run's exchanges up to its cap, count
      // the rest as dropped. A run that is not open records nothing, and is not in the answer.
      const rows = await db.query<{ id: string }>(
        `WITH open AS (
             SELECT id, recorded, max_exchanges FROM runs WHERE id = ANY($1) AND status = 'open' ORDER BY id FOR UPDATE),
           counted AS (
             UPDATE runs r SET recorded = o.recorded + least(w.n, greatest(0, o.max_exchanges - o.recorded)),
               dropped = r.dropped + w.n - least(w.n, greatest(0, o.max_exchanges - o.recorded)),
               seq = greatest(r.seq, w.highest), last_activity_at = now()
             FROM open o JOIN unnest($1::text[], $2::int[], $7::int[]) AS w(id, n, highest) ON w.id = o.id
             WHERE r.id = o.id),
           kept AS (
             INSERT INTO exchanges (run_id, seq, exchange)
             SELECT i.run_id, i.seq, i.exchange
             FROM unnest($3::text[], $4::int[], $5::int[], $6::jsonb[]) AS i(run_id, seq, rank, exchange)
             JOIN open o ON o.id = i.run_id
             WHERE o.recorded + i.rank <= o.max_exchanges)
         SELECT id FROM open`,
        [
          [...counts.keys()],
          [...counts.values()],
          items.map((item) => item.runId),
          items.map((item) => item.seq),
          ranks,
          items.map((item) => item.exchange),
          [...counts.keys()].map((id) => highest.get(id)!),
        ],
      );
      const open = new Set(rows.map((row) => row.id));
      return items.map((item) => open.has(item.runId));
    },
    {
      maxItems,
      maxWeight: maxBytes,
      weigh: (item) => item.exchange.length,
      alone: dataError,
      name: 'record',
    },
  );

  return {
    exclusive,
    async nextSeq(runId, recorded) {
      if (!exclusive) return shared(runId);
      // A run that is not open any more is refused when its call is recorded (or, once its stage is
      // closed, before it is even read).
      const seq = Math.max(numbered.get(runId) ?? 0, recorded) + 1;
      numbered.set(runId, seq);
      return seq;
    },
    record: (runId, seq, exchange) => record({ runId, seq, exchange }),
    forget: (runId) => numbered.delete(runId),
  };
}
