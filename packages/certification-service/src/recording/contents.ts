import type {
  IssuedToken,
  LedgerContents,
  RecordedExchange,
  ScenarioState,
} from '@partner-lending/conformance';
import type { Queryable } from '../db/database.js';

/** The judge's read side of the recording. */

/** Everything a run recorded, as the session file lists it. */
export async function ledgerContents(
  db: Queryable,
  runId: string,
): Promise<LedgerContents & { state: ScenarioState }> {
  const [run] = await db.query<{ scenario_state: ScenarioState; dropped: number; outside_dropped: number }>(
    `SELECT s.state AS scenario_state, r.dropped, r.outside_dropped
     FROM runs r JOIN run_scenarios s ON s.run_id = r.id WHERE r.id = $1`,
    [runId],
  );
  const exchanges = await db.query<{ exchange: RecordedExchange }>(
    'SELECT exchange FROM exchanges WHERE run_id = $1 ORDER BY seq',
    [runId],
  );
  const tokens = await db.query<{ token: IssuedToken }>(
    'SELECT token FROM run_tokens WHERE run_id = $1 AND listed ORDER BY number',
    [runId],
  );
  const state = run!.scenario_state;
  return {
    exchanges: exchanges.map((row) => row.exchange),
    tokens: tokens.map((row) => row.token),
    scenarios: state.records.map((item) => ({ ...item })),
    dropped: run!.dropped,
    ...(run!.outside_dropped > 0 && { outsideDropped: run!.outside_dropped }),
    state,
  };
}
