import { createHash } from 'node:crypto';
import type { Context, Next } from 'hono';
import { writeAudit } from '../audit.js';
import type { Database } from '../db/database.js';
import { startSweep } from '../db/sweep.js';
import { UsageError } from '../errors.js';
import type { LogLine } from '../observability/logger.js';

/** Runs purged per transaction: a long backlog goes in several short transactions, never one long one. */
const perBatch = 200;

export interface PurgeResult {
  /** The runs whose session, report, attestation and exchanges were deleted. */
  runs: string[];
}

/**
 * Deletes what a run recorded once it ended more than `retainDays` days ago, unless a decision rests on
 * it: its exchanges and tokens, its session, reports and attestation. The run's row stays (id, partner,
 * dates, verdict, the session's SHA-256) and the audit log gains a `run.purged` line holding the digests
 * of the session and of the attestation, so that a copy a partner kept can still be matched to it.
 *
 * Safe on several instances at once: each transaction takes the runs it purges with
 * `FOR UPDATE SKIP LOCKED`, and a run being decided on in the same moment is either seen decided
 * (kept) or purged before the decision, which then finds no attestation (not approvable).
 */
export async function purgeExpired(db: Database, retainDays: number): Promise<PurgeResult> {
  if (!Number.isInteger(retainDays) || retainDays < 1)
    throw new UsageError(`retainDays must be a whole number of days, at least 1, got ${retainDays}`);
  const purged: string[] = [];
  for (;;) {
    const batch = await db.transaction(async (tx) => {
      const doomed = await tx.query<{
        id: string;
        partner_id: string;
        verdict: string | null;
        status: string;
        finished_at: Date | string;
        session_sha256: string | null;
        attestation: string | null;
      }>(
        `SELECT id, partner_id, verdict, status, finished_at, session_sha256, attestation FROM runs r
         WHERE status IN ('judged', 'interrupted') AND purged_at IS NULL
           AND finished_at < now() - make_interval(days => $1)
           AND NOT EXISTS (SELECT 1 FROM decisions d WHERE d.run_id = r.id)
         ORDER BY finished_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
        [retainDays, perBatch],
      );
      if (doomed.length === 0) return [];
      const ids = doomed.map((run) => run.id);
      for (const run of doomed)
        await writeAudit(tx, {
          actor: 'system:retention',
          action: 'run.purged',
          subject: run.id,
          detail: {
            partnerId: run.partner_id,
            status: run.status,
            verdict: run.verdict,
            finishedAt: new Date(run.finished_at).toISOString(),
            sessionSha256: run.session_sha256,
            attestationSha256: run.attestation
              ? createHash('sha256').update(run.attestation).digest('hex')
              : null,
            retainDays,
          },
        });
      await tx.query('DELETE FROM exchanges WHERE run_id = ANY($1)', [ids]);
      await tx.query('DELETE FROM run_tokens WHERE run_id = ANY($1)', [ids]);
      await tx.query(
        `UPDATE runs SET session_text = NULL, report_json = NULL, report_html = NULL, attestation = NULL,
           journey = NULL, purged_at = now() WHERE id = ANY($1)`,
        [ids],
      );
      return ids;
    });
    purged.push(...batch);
    if (batch.length < perBatch) return { runs: purged };
  }
}

/**
 * Runs `purgeExpired` now and then (every `everyMs`, at start too) on this instance; errors go to `log`.
 * Stopped by the returned function, which waits for a purge under way.
 */
export function retentionSweeper(options: {
  db: Database;
  retainDays: number;
  everyMs?: number;
  log: LogLine;
}): () => Promise<void> {
  return startSweep(
    async () => {
      const { runs } = await purgeExpired(options.db, options.retainDays);
      if (runs.length > 0)
        options.log(
          `retention: purged the sessions, reports and exchanges of ${runs.length} runs ended more than ${options.retainDays} days ago with no decision`,
          { event: 'retention.purged', runs: runs.length },
        );
    },
    {
      everyMs: options.everyMs ?? 3_600_000,
      failed: (error) => options.log(`retention: purge failed: ${(error as Error).message}`),
    },
  );
}

const purgedPaths = /^\/api\/runs\/([A-Za-z0-9_-]{1,64})\/(session|attestation|report\.html)$/;

/**
 * A middleware for the partner API: a run's session, report or attestation that retention deleted is
 * answered 410 Gone (after the API's own checks, so that nobody learns of a run that is not theirs).
 */
export function purgedRunAnswers(db: Database) {
  return async (c: Context, next: Next) => {
    await next();
    const match = purgedPaths.exec(new URL(c.req.url).pathname);
    if (!match || c.res.status !== 200) return;
    const [row] = await db.query<{ purged_at: Date | string | null }>(
      'SELECT purged_at FROM runs WHERE id = $1',
      [match[1]],
    );
    if (row?.purged_at)
      c.res = new Response(
        JSON.stringify({
          type: 'about:blank',
          title: 'Purged by retention',
          status: 410,
          detail: `this run ended more than the service's retention period ago with no decision resting on it; its ${match[2]} was deleted on ${new Date(row.purged_at).toISOString()} (its digests are kept in the audit log)`,
        }),
        { status: 410, headers: { 'content-type': 'application/problem+json', 'cache-control': 'no-store' } },
      );
  };
}
