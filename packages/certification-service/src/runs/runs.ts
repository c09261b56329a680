import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HostedStage, StageServer } from '@partner-lending/conformance';
import type { Database } from '../db/database.js';
import { observeJudge } from '../observability/judging.js';
import { defaultPlan } from '../plan/plan.js';
import { openJournal } from '../recording/journal.js';
import { secretsKeyFrom } from '../secrets.js';
import { createRun } from './create.js';
import { judgeRun, type RunEnding } from './judge.js';
import { openRunStage } from './stage.js';
import { stageKeyPool } from './stage-keys.js';
import { sweepRuns } from './sweep.js';
import type { RunRequest, RunRow, RunsContext, RunsOptions } from './types.js';

export {
  defaultRunLimits,
  iso,
  type RunLimits,
  RunRefusal,
  type RunRequest,
  type RunRow,
  type RunsOptions,
} from './types.js';

/** A run's row as `RunRow` reads it: with its scenario state, which has a row of its own (`run_scenarios`). */
const selectRun = 'SELECT r.*, s.state AS scenario_state FROM runs r JOIN run_scenarios s ON s.run_id = r.id';

const closedAnswer = JSON.stringify({
  error: 'invalid_request',
  error_description: 'no open certification run at this address (it ended, or never existed)',
});

/** Runs: created by partners, served by any instance, judged once, signed. */
export function createRuns(options: RunsOptions) {
  const { db } = options;
  const stages = new Map<string, Promise<HostedStage>>();
  /** The run id of each address this instance holds a stage for. */
  const held = new Map<string, string>();
  /** The partner of each run this instance holds a stage for. */
  const owners = new Map<string, string>();
  // Where one process owns the database, a call is answered once written to the journal file, and the
  // database is filled from it in the background (see recording/journal-file.ts).
  const journal = openJournal(db, {
    ...(db.journalDir !== undefined && options.journalFile !== false && { journalDir: db.journalDir }),
    log: options.log,
  });
  const stageKeys = stageKeyPool({ size: options.preparedStageKeys ?? 4 });
  const secretsKey = options.secretsKey ?? secretsKeyFrom(options.key.privateKey);

  const row = (id: string) => runRow(db, id);

  /** This instance's stage of an open run (opened on first use, from the run's row). */
  function stageOf(run: RunRow): Promise<HostedStage> {
    let stage = stages.get(run.id);
    if (!stage) {
      stage = openRunStage(db, journal, secretsKey, run, options.log);
      stages.set(run.id, stage);
      held.set(run.address ?? run.id, run.id);
      owners.set(run.id, run.partner_id);
      stage.catch(() => {
        stages.delete(run.id);
        held.delete(run.address ?? run.id);
        owners.delete(run.id);
      });
    }
    return stage;
  }

  async function closeStage(id: string): Promise<void> {
    const stage = stages.get(id);
    stages.delete(id);
    for (const [address, runId] of held) if (runId === id) held.delete(address);
    owners.delete(id);
    journal.forget(id);
    if (stage) await (await stage).close().catch(() => {});
  }

  const ctx: RunsContext = {
    ...options,
    plan: options.plan ?? defaultPlan,
    journal,
    stageKeys,
    secretsKey,
    stages,
    row,
    stageOf,
    closeStage,
  };

  /**
   * Judges a run once, whichever instance asks first (see `judgeRun`), in a span and timed by outcome;
   * resolves with false when another claim won.
   */
  const judge = observeJudge(
    async (id: string, ending: RunEnding) => (await judgeRun(ctx, id, ending)) !== undefined,
    (_, ending) => (ending.how === 'interrupted' ? 'interrupted' : 'judged'),
  );

  async function close(): Promise<void> {
    stageKeys.close();
    await Promise.all([...stages.keys()].map(closeStage));
    await journal.close();
  }

  return {
    plan: ctx.plan,
    create: (partnerId: string, request: RunRequest) => createRun(ctx, partnerId, request),
    row,
    /**
     * Serves a request of a run's stage, reached at its address: `server` and the target below the run's
     * prefix (see `serveRunStage`).
     */
    serveStage: (
      address: string,
      server: StageServer,
      req: IncomingMessage,
      res: ServerResponse,
      target: string,
    ) => serveRunStage({ db, held, stages, stageOf, closeStage }, { address, server, req, res, target }),
    /** The run and partner behind a stage address this instance holds, with no read (for its logs). */
    heldAt(address: string): { runId: string; partnerId: string } | undefined {
      const runId = held.get(address);
      const partnerId = runId === undefined ? undefined : owners.get(runId);
      return runId === undefined || partnerId === undefined ? undefined : { runId, partnerId };
    },
    judge,
    /** Judges the runs that idled or passed their deadline; run by every instance now and then. */
    sweep: (startedAt: number) => sweepRuns({ db, stages, closeStage, judge, log: options.log }, startedAt),
    close,
  };
}

export type Runs = ReturnType<typeof createRuns>;

/**
 * Serves a request of a run's stage, reached at its address: `server` and the target below the run's
 * prefix. A run that is not open (unknown, ended, past its deadline) is answered 404 and recorded nowhere.
 */
async function serveRunStage(
  {
    db,
    held,
    stages,
    stageOf,
    closeStage,
  }: {
    db: Database;
    held: ReadonlyMap<string, string>;
    stages: ReadonlyMap<string, Promise<HostedStage>>;
    stageOf: (run: RunRow) => Promise<HostedStage>;
    closeStage: (id: string) => Promise<void>;
  },
  {
    address,
    server,
    req,
    res,
    target,
  }: {
    address: string;
    server: StageServer;
    req: IncomingMessage;
    res: ServerResponse;
    target: string;
  },
): Promise<void> {
  // A stage this instance holds needs no read: its ledger refuses the call (404) once the run ended
  // or passed its deadline.
  const heldId = held.get(address);
  const stage = heldId === undefined ? undefined : stages.get(heldId);
  if (stage) {
    await (await stage).handle(server, req, res, target);
    return;
  }
  // Runs made before addresses existed are reached at their id.
  const [run] = await db.query<RunRow & Record<string, unknown>>(
    `${selectRun} WHERE r.address = $1 OR (r.address IS NULL AND r.id = $1)`,
    [address],
  );
  if (run?.status !== 'open' || new Date(run.expires_at).getTime() <= Date.now()) {
    if (run) void closeStage(run.id);
    req.resume();
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(closedAnswer);
    return;
  }
  await (await stageOf(run)).handle(server, req, res, target);
}

/** A run's row, by id. */
async function runRow(db: Database, id: string): Promise<RunRow | undefined> {
  const [found] = await db.query<RunRow & Record<string, unknown>>(`${selectRun} WHERE r.id = $1`, [id]);
  return found;
}
