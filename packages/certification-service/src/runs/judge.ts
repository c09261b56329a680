import type { JourneyRecord } from '@partner-lending/conformance';
import { writeAudit } from '../audit.js';
import { JudgingUnavailableError } from '../judging/pool.js';
import type { JudgeOutput } from '../judging/work.mjs';
import { enqueueEvent } from '../outbox/outbox.js';
import { ledgerContents } from '../recording/contents.js';
import { tool } from '../version.js';
import type { RunRow, RunsContext } from './types.js';

/** How a run ended: finished by its partner, idle, past its deadline, or past it while the service was down. */
export interface RunEnding {
  journeyExitCode?: number | null;
  how: 'finished' | 'idle' | 'duration' | 'interrupted';
  /** Who ended it, as the audit log names actors (default `service`). */
  actor?: string;
}

const notes: Record<RunEnding['how'], (run: RunRow) => string | undefined> = {
  finished: () => undefined,
  idle: (run) => `the run received nothing for ${run.idle_seconds} s and was judged`,
  duration: () => 'the run reached its maximum duration and was judged',
  interrupted: () =>
    'the run was open when the service stopped, and past its deadline when it came back: judged on what was recorded',
};

/**
 * Who and what a hosted run certifies, as its session, report and attestation name them: the partner as
 * the vendor knows it, the service, and the plan a certification run followed.
 */
async function namesOf(ctx: RunsContext, run: RunRow) {
  const [partner] = await ctx.db.query<{ id: string; name: string }>(
    'SELECT id, name FROM partners WHERE id = $1',
    [run.partner_id],
  );
  return {
    partner: { id: partner!.id, name: partner!.name },
    service: { url: ctx.publicUrl, version: ctx.version ?? tool.version },
    ...(run.plan && { plan: run.plan }),
  };
}

/**
 * Claims run `$1` for judging (open → closing; or a claim left over 2 minutes ago): its id, or no row.
 * The run's row is locked `FOR UPDATE` (an update alone takes a weaker lock, which a scenario play's key
 * share does not wait for): a play in flight commits first, and none is written after.
 */
export const claimRun = `WITH claim AS (
    SELECT id FROM runs WHERE id = $1
      AND (status = 'open' OR (status = 'closing' AND closing_since < now() - interval '2 minutes'))
    FOR UPDATE)
  UPDATE runs r SET status = 'closing', closing_since = now() FROM claim WHERE r.id = claim.id RETURNING r.id`;

/**
 * Judges a run once, whichever instance asks first: the run is claimed (open → closing) in one
 * statement, judged, and stored (→ judged or interrupted). Resolves with the outcome, or undefined when
 * another claim won.
 */
export async function judgeRun(
  ctx: RunsContext,
  id: string,
  ending: RunEnding,
): Promise<{ status: 'judged' | 'interrupted'; verdict: string } | undefined> {
  const { db, publicUrl } = ctx;
  const claimed = await db.query(claimRun, [id]);
  if (claimed.length === 0) return undefined;
  // From here no instance records for the run (the ledger records only while it is open): the
  // session read below is every exchange that was answered. Calls answered from the journal file
  // (the embedded store) are committed first.
  try {
    await ctx.journal.settle(id);
  } catch (error) {
    await reopen(db, id);
    await ctx.closeStage(id);
    throw new JudgingUnavailableError(
      `run ${id}: its calls could not be recorded: ${(error as Error).message}`,
      5,
      {
        cause: error,
      },
    );
  }
  await ctx.closeStage(id);
  const run = (await ctx.row(id))!;
  const contents = await ledgerContents(db, id);
  const finishedAt = Date.now();
  const startedAtEpoch = Number(run.started_epoch_ms);
  const note = notes[ending.how](run);
  const journey: JourneyRecord = {
    command: [],
    exitCode: ending.journeyExitCode ?? null,
    signal: null,
    durationMs: finishedAt - startedAtEpoch,
    ending: ending.how === 'finished' ? 'exited' : ending.how === 'interrupted' ? 'interrupted' : 'duration',
    ...(note !== undefined && { note }),
    ...(ending.how === 'finished' &&
      ending.journeyExitCode === undefined && {
        note: 'finished by the partner; no journey exit code given',
      }),
  };
  const runUrl = `${publicUrl}/api/runs/${id}`;
  // The CPU-heavy part (session, verdicts, reports, signature) runs on a judging thread, in this
  // partner's turn (see judging/pool.ts), so that the thread serving every partner's calls stays free.
  const names = await namesOf(ctx, run);
  let judged: JudgeOutput;
  try {
    judged = await ctx.judging.judge(run.partner_id, {
      id,
      runUrl,
      stage: run.stage,
      startedAtEpoch,
      durationMs: finishedAt - startedAtEpoch,
      journey,
      contents,
      maxExchanges: run.max_exchanges,
      integration: run.integration,
      names,
      certify: run.certify,
      privateKey: ctx.key.privateKey,
      kid: ctx.key.kid,
    });
  } catch (error) {
    // Judging failed, not the run: it is open again (nothing was stored), so that finishing it again,
    // or the sweep, judges it; the partner is answered 503 with Retry-After, the operator reads why.
    // (Its idle clock restarts, so that the sweep retries an idle run after its idle time, not at once.)
    await reopen(db, id);
    ctx.log(`run ${id}: judging failed, the run is open again: ${(error as Error).message}`, {
      event: 'run.judging_failed',
      runId: id,
      partnerId: run.partner_id,
    });
    throw error instanceof JudgingUnavailableError
      ? error
      : new JudgingUnavailableError(`run ${id}: judging failed: ${(error as Error).message}`, 5, {
          cause: error,
        });
  }
  const { verdict } = judged;
  const status = ending.how === 'interrupted' ? 'interrupted' : 'judged';
  await storeJudgement(db, { id, run, ending, status, finishedAt, journey, judged });
  ctx.log(`run ${id}: ${status}, ${verdict} (${contents.exchanges.length} exchanges)`, {
    event: 'run.judged',
    runId: id,
    partnerId: run.partner_id,
    status,
    verdict,
  });
  return { status, verdict };
}

/** Judging failed or could not start: the run is open again (nothing was stored), its idle clock restarted. */
async function reopen(db: RunsContext['db'], id: string): Promise<void> {
  await db.query(
    "UPDATE runs SET status = 'open', closing_since = NULL, last_activity_at = now() WHERE id = $1 AND status = 'closing'",
    [id],
  );
}

/** Stores a run's judgement: the verdict, its audit line and its webhook event (run.judged) commit together. */
async function storeJudgement(
  db: RunsContext['db'],
  judgement: {
    id: string;
    run: RunRow;
    ending: RunEnding;
    status: 'judged' | 'interrupted';
    finishedAt: number;
    journey: JourneyRecord;
    judged: JudgeOutput;
  },
): Promise<void> {
  const { id, run, ending, status, finishedAt, journey, judged } = judgement;
  const { sessionText, sessionSha256, reportJson, reportHtml, verdict, attestation } = judged;
  await db.transaction(async (tx) => {
    const stored = await tx.query(
      `UPDATE runs SET status = $2, finished_at = $3, journey = $4, session_text = $5, session_sha256 = $6,
       report_json = $7, report_html = $8, verdict = $9, attestation = $10, client_secret = NULL, signing_key = NULL
     WHERE id = $1 AND status = 'closing' RETURNING id`,
      [
        id,
        status,
        new Date(finishedAt),
        JSON.stringify(journey),
        sessionText,
        sessionSha256,
        reportJson,
        reportHtml,
        verdict,
        attestation,
      ],
    );
    await writeAudit(tx, {
      actor: ending.actor ?? 'service',
      action: 'run.finished',
      subject: id,
      detail: { how: ending.how, status, verdict, certification: run.certify },
    });
    if (stored.length > 0)
      await enqueueEvent(tx, {
        type: 'run.judged',
        data: { partnerId: run.partner_id, runId: id, verdict, status, certify: run.certify },
      });
  });
}
