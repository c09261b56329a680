import { createHash } from 'node:crypto';
import {
  assembleSession,
  type ClientReport,
  type ClientSession,
  formatClientHtmlReport,
  formatJsonReport,
  formatSession,
  type JourneyRecord,
  judgeSession,
  reportVerdict,
  signEnvelope,
  stageInfoOf,
  testResultStatement,
} from '@partner-lending/conformance';
import { tool } from '../version.js';
import { enqueueEvent } from '../webhooks/outbox.js';
import { ledgerContents } from './ledger.js';
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
  const claimed = await db.query(
    "UPDATE runs SET status = 'closing', closing_since = now() WHERE id = $1 AND (status = 'open' OR (status = 'closing' AND closing_since < now() - interval '2 minutes')) RETURNING id",
    [id],
  );
  if (claimed.length === 0) return undefined;
  // From here no instance records for the run (the ledger records only while it is open): the
  // session read below is every exchange that was answered.
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
  const session: ClientSession = assembleSession({
    stage: stageInfoOf(run.stage),
    startedAtEpoch,
    durationMs: finishedAt - startedAtEpoch,
    journey,
    contents,
    maxExchanges: run.max_exchanges,
    integration: run.integration ?? undefined,
    names: await namesOf(ctx, run),
    redact: (text) => text,
  });
  const sessionText = formatSession(session);
  const sessionSha256 = createHash('sha256').update(sessionText).digest('hex');
  const judged: ClientReport = judgeSession(session, {
    certify: run.certify,
    provenance: { source: 'service', sessionSha256 },
  });
  const runUrl = `${publicUrl}/api/runs/${id}`;
  const report = { ...judged, run: { id, url: runUrl } } as ClientReport;
  const reportJson = formatJsonReport(report);
  const statement = testResultStatement({
    sessionBytes: sessionText,
    report,
    sessionName: `${id}.session.json`,
    url: runUrl,
  });
  const envelope = signEnvelope(Buffer.from(JSON.stringify(statement)), ctx.key.privateKey, ctx.key.kid);
  const status = ending.how === 'interrupted' ? 'interrupted' : 'judged';
  const verdict = reportVerdict(report).word;
  // The verdict, its audit line and its webhook event (run.judged) commit together.
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
        formatClientHtmlReport(report, session),
        verdict,
        `${JSON.stringify(envelope, null, 2)}\n`,
      ],
    );
    await tx.query('INSERT INTO audit_log (actor, action, subject, detail) VALUES ($1, $2, $3, $4)', [
      ending.actor ?? 'service',
      'run.finished',
      id,
      JSON.stringify({ how: ending.how, status, verdict, certification: run.certify }),
    ]);
    if (stored.length > 0)
      await enqueueEvent(tx, {
        type: 'run.judged',
        data: { partnerId: run.partner_id, runId: id, verdict, status, certify: run.certify },
      });
  });
  ctx.log(`run ${id}: ${status}, ${verdict} (${contents.exchanges.length} exchanges)`, {
    event: 'run.judged',
    runId: id,
    partnerId: run.partner_id,
    status,
    verdict,
  });
  return { status, verdict };
}
