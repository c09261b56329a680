import { createHash } from 'node:crypto';
import {
  type IssuedToken,
  type LedgerContents,
  playScenarios,
  type RecordedExchange,
  type ScenarioName,
  type ScenarioState,
  type StageLedger,
} from '@partner-lending/conformance';
import type { Database, Queryable } from '../db/database.js';
import { StorageUnavailableError, unavailableRetrySeconds } from '../errors.js';
import type { RunJournal } from './journal.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * An exchange's JSON as PostgreSQL's jsonb can hold it: jsonb has no NUL character, so a NUL in a
 * recorded text (a hostile body) is kept as the six visible characters `\u0000`, as a terminal shows a
 * control character. (An escaped backslash before `u0000`, an odd run of them, is left alone.)
 */
export const storableJson = (json: string) =>
  json.replace(/(\\*)\\u0000/g, (match, slashes: string) =>
    slashes.length % 2 === 0 ? `${slashes}\\\\u0000` : match,
  );

/** Thrown when a run's request arrives after the run ended: the stage answers it 404. */
export class RunClosedError extends Error {
  constructor() {
    super('the run has ended');
    this.name = 'RunClosedError';
  }
}

/** Tokens of a run an instance keeps in memory at most (past it, it forgets them all and asks again). */
const maxCachedTokens = 1000;

/**
 * A run's stage ledger in the database: every instance serving the run numbers, plays and records
 * through it, so that the scenario plan plays once whichever instance a call reaches, and every
 * exchange is committed before its answer leaves. Tokens are known by their SHA-256 only.
 */
export function databaseLedger(
  db: Database,
  journal: RunJournal,
  run: { id: string; enabled: ReadonlySet<ScenarioName>; grant: readonly string[]; seq: number },
  onUnavailable?: (error: StorageUnavailableError) => void,
): StageLedger {
  const { id } = run;
  /** The steps an API call can trigger that this run plays. */
  const callSteps = (['revocation', 'throttle', 'unavailable'] as const).filter((name) =>
    run.enabled.has(name),
  );
  /** A player on the last state seen, once none of `callSteps` can fire any more. */
  let settled: ReturnType<typeof playScenarios> | undefined =
    callSteps.length === 0 ? playScenarios(run.enabled, run.grant) : undefined;
  /**
   * Tokens this instance has seen, by value. A token changes once at most (a revocation, which only a
   * call-step can make): until the plan is settled, `play` reads the token afresh under the run's lock
   * anyway, and once it is settled the cache starts over from what the database says after every
   * revocation (`generation` keeps out a lookup that began before).
   */
  const tokens = new Map<string, IssuedToken>();
  let generation = 0;
  const remember = (value: string, token: IssuedToken) => {
    if (tokens.size >= maxCachedTokens) tokens.clear();
    tokens.set(value, token);
  };
  /** Restores the scenario player under the run's row lock, applies `change`, and writes it back. */
  async function withScenarios<T>(
    change: (player: ReturnType<typeof playScenarios>, tx: Queryable) => Promise<T> | T,
  ): Promise<T> {
    return db.transaction(async (tx) => {
      const [row] = await tx.query<{ scenario_state: ScenarioState; status: string }>(
        'SELECT scenario_state, status FROM runs WHERE id = $1 FOR UPDATE',
        [id],
      );
      if (row?.status !== 'open') throw new RunClosedError();
      const player = playScenarios(run.enabled, run.grant, row.scenario_state);
      const before = JSON.stringify(player.state());
      const result = await change(player, tx);
      const after = JSON.stringify(player.state());
      if (after !== before) await tx.query('UPDATE runs SET scenario_state = $2 WHERE id = $1', [id, after]);
      if (
        !settled &&
        callSteps.every((name) => player.records.find((item) => item.name === name)?.firedAt !== undefined)
      ) {
        settled = playScenarios(run.enabled, run.grant, player.state());
        tokens.clear();
        generation += 1;
      }
      return result;
    });
  }
  return {
    async nextSeq() {
      const seq = await journal.nextSeq(id, run.seq);
      if (seq === undefined) throw new RunClosedError();
      return seq;
    },
    async tokensByValue(values) {
      const found = new Map<string, IssuedToken>();
      const hashes = new Map<string, string>();
      for (const value of values) {
        const token = tokens.get(value);
        if (token) found.set(value, token);
        else hashes.set(sha256(value), value);
      }
      if (hashes.size === 0) return found;
      const asked = generation;
      const rows = await db.query<{ value_sha256: string; token: IssuedToken }>(
        'SELECT value_sha256, token FROM run_tokens WHERE run_id = $1 AND value_sha256 = ANY($2)',
        [id, [...hashes.keys()]],
      );
      for (const row of rows) {
        const value = hashes.get(row.value_sha256)!;
        found.set(value, row.token);
        if (asked === generation) remember(value, row.token);
      }
      return found;
    },
    async issue(draft) {
      const asked = generation;
      // One statement: the run's next token number (an open run only), and the token stored by hash
      // with its reference (`T1`, `T2`, …); listed in the session while the run keeps exchanges.
      const [row] = await db.query<{ number: number }>(
        `WITH counted AS (
           UPDATE runs SET token_count = token_count + 1 WHERE id = $1 AND status = 'open'
           RETURNING token_count, recorded < max_exchanges AS listed)
         INSERT INTO run_tokens (run_id, value_sha256, number, listed, token)
         SELECT $1, $2, token_count, listed, $3::jsonb || jsonb_build_object('ref', 'T' || token_count) FROM counted
         RETURNING number`,
        [id, sha256(draft.value), JSON.stringify(draft.token)],
      );
      if (!row) throw new RunClosedError();
      const issued: IssuedToken = { ref: `T${row.number}`, ...draft.token };
      if (asked === generation) remember(draft.value, issued);
      return issued;
    },
    async tokenRequested(scopes, at, seq) {
      if (!run.enabled.has('narrowed-grant') || scopes.every((scope) => run.grant.includes(scope))) return;
      await withScenarios((player) => player.tokenRequested(scopes, at, seq));
    },
    async play(method, path, issued, now, at, seq) {
      if (!issued) return undefined;
      // Once every step a call can trigger has fired (or none is on), a call can only meet a revoked
      // token, which the token itself says: the same player decides, on the state last seen, with no
      // transaction (fired steps never un-fire).
      if (settled) return settled.injectionFor(method, path, issued, now);
      return withScenarios(async (player, tx) => {
        // The token as the database knows it now: another instance may have revoked it meanwhile.
        const [current] = await tx.query<{ token: IssuedToken }>(
          'SELECT token FROM run_tokens WHERE run_id = $1 AND number = $2',
          [id, Number(issued.ref.slice(1))],
        );
        const token: IssuedToken = current?.token ?? issued;
        const injected = player.injectionFor(method, path, token, now);
        if (injected) player.injected(injected, at, seq);
        if (injected === 'revoked' && token.revokedAt !== undefined && current?.token.revokedAt === undefined)
          await tx.query('UPDATE run_tokens SET token = $3 WHERE run_id = $1 AND number = $2', [
            id,
            Number(token.ref.slice(1)),
            JSON.stringify(token),
          ]);
        return injected;
      });
    },
    async apiAnswered(status, challenge, at, seq) {
      if (status !== 403 || !run.enabled.has('narrowed-grant')) return;
      await withScenarios((player) => player.apiAnswered(status, challenge, at, seq));
    },
    async record(exchange) {
      // Committed before the answer leaves: a service killed right after loses nothing it answered.
      // Only an open run records: once judging has claimed the run, a call still in flight is refused
      // rather than answered and left out of the session.
      if (!(await journal.record(id, exchange.seq, storableJson(JSON.stringify(exchange)))))
        throw new RunClosedError();
    },
    refusal: (error) => {
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
    },
  };
}

/** Everything a run recorded, as the session file lists it. */
export async function ledgerContents(
  db: Queryable,
  runId: string,
): Promise<LedgerContents & { state: ScenarioState }> {
  const [run] = await db.query<{ scenario_state: ScenarioState; dropped: number }>(
    'SELECT scenario_state, dropped FROM runs WHERE id = $1',
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
    state,
  };
}
