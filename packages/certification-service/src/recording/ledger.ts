import {
  maxOutsideExchanges,
  playScenarios,
  type RecordedExchange,
  type ScenarioName,
  type ScenarioState,
  type StageLedger,
} from '@partner-lending/conformance';
import type { Database } from '../db/database.js';
import { StorageUnavailableError, unavailableRetrySeconds } from '../errors.js';
import type { Journal } from './journal.js';
import { RunClosedError } from './run-closed.js';
import { runTokens } from './run-tokens.js';
import { runScenarios, scenarioSight } from './scenarios.js';

export { RunClosedError } from './run-closed.js';

/**
 * An exchange's JSON as PostgreSQL's jsonb can hold it: jsonb has no NUL character, so a NUL in a
 * recorded text (a hostile body) is kept as the six visible characters `\u0000`, as a terminal shows a
 * control character. (An escaped backslash before `u0000`, an odd run of them, is left alone.)
 */
export const storableJson = (json: string) =>
  json.replace(/(\\*)\\u0000/g, (match, slashes: string) =>
    slashes.length % 2 === 0 ? `${slashes}\\\\u0000` : match,
  );

/**
 * A run's stage ledger in the database: every instance serving the run numbers, plays and records
 * through it, so that the scenario plan plays once whichever instance a call reaches (scenarios.ts), and
 * every exchange is committed before its answer leaves. Tokens are known by their SHA-256 only
 * (run-tokens.ts).
 */
export function databaseLedger(
  db: Database,
  journal: Journal,
  run: {
    id: string;
    enabled: ReadonlySet<ScenarioName>;
    grant: readonly string[];
    seq: number;
    /** The run's count of tokens issued as its row said when the stage opened (default 0). */
    tokenCount?: number;
    /** The run's scenario state as its row said when the stage opened. */
    state?: ScenarioState;
    /** The run's deadline (epoch ms): no call is recorded past it. */
    expiresAt?: number;
  },
  onUnavailable?: (error: StorageUnavailableError) => void,
): StageLedger {
  const { id } = run;
  journal.track(id, run.expiresAt ?? Number.POSITIVE_INFINITY);
  // Where this instance alone serves the run (the embedded store), the plan plays in memory.
  const live = journal.exclusive ? playScenarios(run.enabled, run.grant, run.state) : undefined;
  const sight = scenarioSight(run, live);
  const tokens = runTokens(db, journal, run, !run.enabled.has('revocation') || sight.revocationFired());
  const scenarios = runScenarios(db, journal, run, live, sight, tokens);
  return {
    async nextSeq() {
      const seq = await journal.nextSeq(id, run.seq);
      if (seq === undefined) throw new RunClosedError();
      return seq;
    },
    tokensByValue: tokens.tokensByValue,
    issue: tokens.issue,
    tokenRequested: scenarios.tokenRequested,
    play: scenarios.play,
    apiAnswered: scenarios.apiAnswered,
    async record(exchange) {
      // Traffic from outside the run (none of its credentials or tokens) is kept apart, under a cap of
      // its own: an outsider never uses up the run's own recording, and is never judged.
      if (exchange.outside) return recordOutside(db, id, exchange);
      // Committed before the answer leaves: a service killed right after loses nothing it answered.
      // Only an open run records: once judging has claimed the run, a call still in flight is refused
      // rather than answered and left out of the session.
      // Playing in memory, the scenario state as it stands goes with it when it changed.
      const state = scenarios.takeState();
      let kept: boolean;
      try {
        kept = await journal.record(id, exchange.seq, storableJson(JSON.stringify(exchange)), state);
      } catch (error) {
        if (state) scenarios.untake();
        throw error;
      }
      if (!kept) throw new RunClosedError();
    },
    refusal: (error) => ledgerRefusal(error, onUnavailable),
  };
}

/**
 * Records a call from outside the run (none of its credentials or tokens), kept apart under a cap of its
 * own: an outsider never uses up the run's own recording, and is never judged.
 */
async function recordOutside(db: Database, id: string, exchange: RecordedExchange): Promise<void> {
  const [kept] = await db.query<{ id: string }>(
    `WITH open AS (
           SELECT id, outside_recorded FROM runs WHERE id = $1 AND status = 'open' AND expires_at > now() FOR NO KEY UPDATE),
         counted AS (
           UPDATE runs r SET outside_recorded = o.outside_recorded + (o.outside_recorded < $2)::int,
             outside_dropped = r.outside_dropped + (o.outside_recorded >= $2)::int, seq = greatest(r.seq, $3)
           FROM open o WHERE r.id = o.id),
         kept AS (
           INSERT INTO exchanges (run_id, seq, exchange) SELECT $1, $3, $4::jsonb FROM open o
           WHERE o.outside_recorded < $2)
       SELECT id FROM open`,
    [id, maxOutsideExchanges, exchange.seq, storableJson(JSON.stringify(exchange))],
  );
  if (!kept) throw new RunClosedError();
}

/** How the stage answers a call the ledger refused; undefined for an error that is not a refusal. */
function ledgerRefusal(error: unknown, onUnavailable?: (error: StorageUnavailableError) => void) {
  if (error instanceof RunClosedError)
    return {
      status: 404,
      body: JSON.stringify({
        error: 'invalid_request',
        error_description: 'no open certification run at this address (it ended, or never existed)',
      }),
    };
  // The database is out of reach: the call was not recorded, so it is refused (never answered
  // unrecorded), with when to retry and nothing of the cause (the service logs it).
  if (error instanceof StorageUnavailableError) {
    onUnavailable?.(error);
    return {
      status: 503,
      headers: { 'retry-after': String(unavailableRetrySeconds) },
      body: JSON.stringify({
        error: 'temporarily_unavailable',
        error_description: `the certification service cannot record this call just now; retry in ${unavailableRetrySeconds} s`,
      }),
    };
  }
  return undefined;
}
