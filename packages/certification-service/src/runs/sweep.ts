import type { Database } from '../db/database.js';
import type { LogLine } from '../observability/logger.js';
import type { RunEnding } from './judge.js';

/** Judges the runs that idled or passed their deadline; run by every instance now and then. */
export async function sweepRuns(
  {
    db,
    stages,
    closeStage,
    judge,
    log,
  }: {
    db: Database;
    stages: ReadonlyMap<string, unknown>;
    closeStage: (id: string) => Promise<void>;
    judge: (id: string, ending: RunEnding) => Promise<boolean>;
    log: LogLine;
  },
  startedAt: number,
): Promise<void> {
  // The stages this instance holds for runs another instance ended.
  if (stages.size > 0) {
    const ended = await db.query<{ id: string }>(
      "SELECT id FROM runs WHERE id = ANY($1) AND status <> 'open'",
      [[...stages.keys()]],
    );
    for (const { id } of ended) await closeStage(id);
  }
  const due = await db.query<{ id: string; expired: boolean; expires_at: Date | string }>(
    `SELECT id, expires_at < now() AS expired, expires_at
     FROM runs WHERE (status = 'open' AND (expires_at < now() OR last_activity_at < now() - make_interval(secs => idle_seconds)))
        OR (status = 'closing' AND closing_since < now() - interval '2 minutes')`,
  );
  for (const run of due) {
    // Its deadline passed before this instance started: the service was down when the run should
    // have ended, and nobody served it to the end.
    const how: RunEnding['how'] = !run.expired
      ? 'idle'
      : new Date(run.expires_at).getTime() < startedAt
        ? 'interrupted'
        : 'duration';
    await judge(run.id, { how }).catch((error: unknown) =>
      log(`run ${run.id}: judging failed: ${(error as Error).message}`),
    );
  }
}
