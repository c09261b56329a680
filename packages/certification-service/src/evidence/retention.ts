import { startSweep } from '../db/sweep.js';
import type { Database } from '../db/types.js';
import { UsageError } from '../errors.js';
import type { LogLine } from '../observability/logger.js';

/** Rows deleted per statement: a long backlog goes in several short statements, never one long one. */
const perStatement = 5000;

/** Days evidence is kept by default (`serve --evidence-retention-days`). */
export const defaultEvidenceRetentionDays = 30;

/**
 * Deletes the exchanges received more than `days` days ago (judged or not: their queue rows go with
 * them) and the ids of the batches received as long ago (a batch sent again after that is stored
 * again, and purged at the next sweep). Safe on several instances at once.
 */
export async function purgeEvidence(
  db: Database,
  days: number,
): Promise<{ exchanges: number; batches: number }> {
  if (!Number.isInteger(days) || days < 1)
    throw new UsageError(`evidence retention must be a whole number of days, at least 1, got ${days}`);
  const purge = async (sql: string): Promise<number> => {
    let total = 0;
    for (;;) {
      const rows = await db.query(sql, [days, perStatement]);
      total += rows.length;
      if (rows.length < perStatement) return total;
    }
  };
  const exchanges = await purge(
    // With its queue row, if it was never judged (migration 10 dropped the cascade).
    `WITH gone AS (DELETE FROM evidence_exchanges WHERE id IN (SELECT id FROM evidence_exchanges
       WHERE received_at < now() - make_interval(days => $1) LIMIT $2) RETURNING id),
     unqueued AS (DELETE FROM evidence_queue WHERE exchange_id IN (SELECT id FROM gone))
     SELECT id FROM gone`,
  );
  const batches = await purge(
    `DELETE FROM evidence_batches WHERE (reporter_id, batch_id) IN (SELECT reporter_id, batch_id FROM evidence_batches
       WHERE received_at < now() - make_interval(days => $1) LIMIT $2) RETURNING batch_id`,
  );
  return { exchanges, batches };
}

/** Runs `purgeEvidence` at start and every `everyMs` (an hour) on this instance; errors go to `log`. */
export function evidenceRetentionSweeper(options: {
  db: Database;
  days: number;
  everyMs?: number;
  log: LogLine;
}): () => Promise<void> {
  return startSweep(
    async () => {
      const { exchanges, batches } = await purgeEvidence(options.db, options.days);
      if (exchanges + batches > 0)
        options.log(
          `evidence retention: deleted ${exchanges} exchanges and ${batches} batch ids received more than ${options.days} days ago`,
          { event: 'evidence.purged', exchanges, batches },
        );
    },
    {
      everyMs: options.everyMs ?? 3_600_000,
      failed: (error) => options.log(`evidence retention: purge failed: ${(error as Error).message}`),
    },
  );
}
