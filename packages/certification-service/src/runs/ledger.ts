import { createHash } from 'node:crypto';
import {
  grantsEveryScope,
  type IssuedToken,
  type LedgerContents,
  maxOutsideExchanges,
  narrowedGrantScopes,
  playScenarios,
  type RecordedExchange,
  type ScenarioName,
  type ScenarioPlayer,
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
  run: {
    id: string;
    enabled: ReadonlySet<ScenarioName>;
    grant: readonly string[];
    seq: number;
    /** The run's scenario state as its row said when the stage opened. */
    state?: ScenarioState;
    /** The run's deadline (epoch ms): no call is recorded past it. */
    expiresAt?: number;
  },
  onUnavailable?: (error: StorageUnavailableError) => void,
): StageLedger {
  const { id } = run;
  journal.track(id, run.expiresAt ?? Number.POSITIVE_INFINITY);
  /** The steps an API call can trigger that this run plays. */
  const callSteps = (['revocation', 'throttle', 'unavailable'] as const).filter((name) =>
    run.enabled.has(name),
  );
  const firedIn = (player: ScenarioPlayer | undefined, name: ScenarioName) =>
    player?.records.find((item) => item.name === name)?.firedAt !== undefined;
  const firedCount = (player: ScenarioPlayer | undefined) =>
    player ? player.records.filter((item) => item.firedAt !== undefined).length : -1;
  /**
   * Where this instance alone serves the run (the embedded store, which one process owns), the plan
   * plays here, in memory, as on the local stage: `live` is the run's scenario state, and it is written
   * with the next exchange recorded (`dirty`), in the same statement, committed before that answer
   * leaves. A revoked token is written at once. Where instances share the database, the state is the
   * database's, read and written under the run's row lock (`withScenarios`).
   */
  const live = journal.exclusive ? playScenarios(run.enabled, run.grant, run.state) : undefined;
  let dirty = false;
  /** Tokens this instance revoked (playing in memory), by reference: a copy read before is corrected. */
  const revokedRefs = new Map<string, number>();
  /**
   * A player on the latest scenario state this instance knows: read under the run's lock, or its own
   * (`live`). Fired steps never un-fire, so what it says has fired has fired for every instance; what it
   * says has not may have fired elsewhere since, and is checked under the lock.
   */
  let seen: ScenarioPlayer | undefined = live
    ? playScenarios(run.enabled, run.grant, live.state())
    : run.state
      ? playScenarios(run.enabled, run.grant, run.state)
      : callSteps.length === 0
        ? playScenarios(run.enabled, run.grant)
        : undefined;
  /** `live` changed: written with the next record; `seen` follows it once a step fired. */
  const changed = () => {
    dirty = true;
    if (live && firedCount(live) !== firedCount(seen))
      seen = playScenarios(run.enabled, run.grant, live.state());
  };
  /**
   * Whether a call of `method` might fire a step, as far as this instance knows: while the revocation or
   * the throttle has not fired (they count eligible calls), any call; after, only a POST while the outage
   * has not fired. A call that cannot fire anything is decided on `seen`, with no lock and no statement:
   * what the local stage does in memory.
   */
  const mayFire = (method: string) =>
    callSteps.some((name) => !firedIn(seen, name) && (name !== 'unavailable' || method === 'POST'));
  /**
   * Tokens this instance has seen, by value. A token changes once at most: the revocation revokes one,
   * under the run's lock. Until this instance has seen the revocation fired, every call that could meet a
   * revoked token takes the lock and reads its token afresh; once it has (and that transaction is
   * committed), the cache starts over from what the database says, and those tokens (`fresh`) can be
   * trusted with no lock, since nothing revokes a token any more. `generation` keeps out a lookup that
   * began before.
   */
  const tokens = new Map<string, IssuedToken>();
  let fresh = new WeakSet<IssuedToken>();
  let generation = 0;
  /**
   * With no revocation in the plan, or the revocation fired before the stage opened here, no token
   * changes any more: every token this instance sees is current.
   */
  let revocationSeen = !run.enabled.has('revocation') || firedIn(seen, 'revocation');
  /** A client authorised for every scope meets the narrowed grant at its token endpoint, once. */
  const everyScope = grantsEveryScope(run.grant);
  const remember = (value: string, token: IssuedToken) => {
    if (tokens.size >= maxCachedTokens) tokens.clear();
    tokens.set(value, token);
    fresh.add(token);
  };
  /** Calls of this instance waiting for the run's lock: they take it one at a time, in arrival order. */
  let turn: Promise<unknown> = Promise.resolve();
  /**
   * Restores the scenario player under the run's row lock, applies `change`, and writes it back. The
   * calls of this instance queue here rather than in the database, so that each can see what the one
   * before it learnt (`skip`: it need not take the lock any more) before it costs a transaction.
   */
  async function withScenarios<T>(
    change: (player: ScenarioPlayer, tx: Queryable) => Promise<T> | T,
    skip?: () => { value: T } | undefined,
  ): Promise<T> {
    const previous = turn;
    let done!: () => void;
    turn = new Promise<void>((resolve) => {
      done = resolve;
    });
    try {
      await previous;
      const skipped = skip?.();
      if (skipped) return skipped.value;
      let state: ScenarioState | undefined;
      const result = await db.transaction(async (tx) => {
        // Its commit need not wait for the disk: the call's record, committed after it and waited for
        // before the answer leaves, flushes it too (PostgreSQL writes its log in order); lost with the
        // process before that, it goes with a call that was never answered.
        if (db.kind === 'postgres') await tx.query('SET LOCAL synchronous_commit = off');
        const [row] = await tx.query<{ scenario_state: ScenarioState; status: string; in_time: boolean }>(
          'SELECT scenario_state, status, expires_at > now() AS in_time FROM runs WHERE id = $1 FOR UPDATE',
          [id],
        );
        if (row?.status !== 'open' || !row.in_time) throw new RunClosedError();
        const player = playScenarios(run.enabled, run.grant, row.scenario_state);
        const before = JSON.stringify(player.state());
        const result = await change(player, tx);
        state = player.state();
        const after = JSON.stringify(state);
        if (after !== before)
          await tx.query('UPDATE runs SET scenario_state = $2 WHERE id = $1', [id, after]);
        return result;
      });
      // Committed: what it fired is now every instance's (and stays so).
      if (state) learn(state);
      return result;
    } finally {
      done();
    }
  }
  /** A committed scenario state: kept as `seen` when it knows more; the revocation seen clears the tokens. */
  function learn(state: ScenarioState): void {
    const fired = (player: ScenarioPlayer | undefined) =>
      player ? player.records.filter((item) => item.firedAt !== undefined).length : -1;
    const player = playScenarios(run.enabled, run.grant, state);
    if (fired(player) >= fired(seen)) seen = player;
    if (!revocationSeen && firedIn(player, 'revocation')) {
      revocationSeen = true;
      tokens.clear();
      fresh = new WeakSet();
      generation += 1;
    }
  }
  /** The narrowed grant has fired (as far as this instance knows). */
  const narrowedFired = () => firedIn(seen, 'narrowed-grant');
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
      // The token stored by hash with the run's next token number (an open run only), grouped with
      // other runs' tokens in one statement.
      const number = await journal.issue(id, sha256(draft.value), JSON.stringify(draft.token));
      if (number === undefined) throw new RunClosedError();
      const issued: IssuedToken = { ref: `T${number}`, ...draft.token };
      if (asked === generation) remember(draft.value, issued);
      return issued;
    },
    async tokenRequested(scopes, at, seq) {
      // The narrowed grant plays once: after it fired, or when this request cannot fire it, no lock.
      if (!run.enabled.has('narrowed-grant') || narrowedFired()) return undefined;
      if (!everyScope && scopes.every((scope) => run.grant.includes(scope))) return undefined;
      // Authorised for every scope: only a request beyond the narrowed grant's scopes is narrowed.
      if (everyScope) {
        const asked = scopes.length > 0 ? scopes.filter((scope) => run.grant.includes(scope)) : run.grant;
        if (asked.every((scope) => narrowedGrantScopes.includes(scope))) return undefined;
      }
      if (live) {
        const answer = live.tokenRequested(scopes, at, seq);
        changed();
        return answer;
      }
      return withScenarios(
        (player) => player.tokenRequested(scopes, at, seq),
        () => (narrowedFired() ? { value: undefined } : undefined),
      );
    },
    async play(method, path, issued, now, at, seq) {
      if (!issued) return undefined;
      if (live) {
        const revokedAt = revokedRefs.get(issued.ref);
        if (revokedAt !== undefined && issued.revokedAt === undefined) issued.revokedAt = revokedAt;
        if (!mayFire(method)) return seen!.injectionFor(method, path, issued, now);
        const wasRevoked = issued.revokedAt !== undefined;
        const injected = live.injectionFor(method, path, issued, now);
        if (injected) live.injected(injected, at, seq);
        changed();
        if (injected === 'revoked' && !wasRevoked && issued.revokedAt !== undefined) {
          revokedRefs.set(issued.ref, issued.revokedAt);
          await journal.revoke(id, Number(issued.ref.slice(1)), JSON.stringify(issued));
        }
        return injected;
      }
      // A call that cannot fire a step, with a token known to be current, is decided on the state last
      // seen (a revoked token says so itself), with no transaction.
      const quiet = () => seen && !mayFire(method) && (revocationSeen ? fresh.has(issued) : false);
      if (quiet()) return seen!.injectionFor(method, path, issued, now);
      return withScenarios(
        async (player, tx) => {
          // The token as the database knows it now: another instance may have revoked it meanwhile.
          const [current] = await tx.query<{ token: IssuedToken }>(
            'SELECT token FROM run_tokens WHERE run_id = $1 AND number = $2',
            [id, Number(issued.ref.slice(1))],
          );
          const token: IssuedToken = current?.token ?? issued;
          // Read before the player decides: revoking it sets `revokedAt` on this very object.
          const wasRevoked = token.revokedAt !== undefined;
          const injected = player.injectionFor(method, path, token, now);
          if (injected) player.injected(injected, at, seq);
          if (injected === 'revoked' && !wasRevoked && token.revokedAt !== undefined)
            await tx.query('UPDATE run_tokens SET token = $3 WHERE run_id = $1 AND number = $2', [
              id,
              Number(token.ref.slice(1)),
              JSON.stringify(token),
            ]);
          return injected;
        },
        // The call before it in the queue may have settled what this one needed the lock for.
        () => (quiet() ? { value: seen!.injectionFor(method, path, issued, now) } : undefined),
      );
    },
    async apiAnswered(status, challenge, at, seq) {
      if (status !== 403 || !run.enabled.has('narrowed-grant') || narrowedFired()) return;
      if (!/insufficient_scope/.test(challenge ?? '')) return;
      if (live) {
        live.apiAnswered(status, challenge, at, seq);
        changed();
        return;
      }
      await withScenarios(
        (player) => player.apiAnswered(status, challenge, at, seq),
        () => (narrowedFired() ? { value: undefined } : undefined),
      );
    },
    async record(exchange) {
      // Traffic from outside the run (none of its credentials or tokens) is kept apart, under a cap of
      // its own: an outsider never uses up the run's own recording, and is never judged.
      if (exchange.outside) {
        const [kept] = await db.query<{ id: string }>(
          `WITH open AS (
               SELECT id, outside_recorded FROM runs WHERE id = $1 AND status = 'open' AND expires_at > now() FOR UPDATE),
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
        return;
      }
      // Committed before the answer leaves: a service killed right after loses nothing it answered.
      // Only an open run records: once judging has claimed the run, a call still in flight is refused
      // rather than answered and left out of the session.
      // Playing in memory, the scenario state as it stands goes with it when it changed.
      const state = live && dirty ? JSON.stringify(live.state()) : undefined;
      if (state) dirty = false;
      let kept: boolean;
      try {
        kept = await journal.record(id, exchange.seq, storableJson(JSON.stringify(exchange)), state);
      } catch (error) {
        if (state) dirty = true;
        throw error;
      }
      if (!kept) throw new RunClosedError();
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
  const [run] = await db.query<{ scenario_state: ScenarioState; dropped: number; outside_dropped: number }>(
    'SELECT scenario_state, dropped, outside_dropped FROM runs WHERE id = $1',
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
