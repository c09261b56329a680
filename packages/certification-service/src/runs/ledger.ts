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

/**
 * Attempts to play one call where instances share the database before giving up: each attempt that
 * loses is one another instance won, so this is reached only if the run's other instances play
 * hundreds of calls while this one plays one.
 */
const maxPlayAttempts = 200;

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
   * database's, written only over the state it was played on (`withScenarios`).
   */
  const live = journal.exclusive ? playScenarios(run.enabled, run.grant, run.state) : undefined;
  let dirty = false;
  /** Tokens this instance revoked (playing in memory), by reference: a copy read before is corrected. */
  const revokedRefs = new Map<string, number>();
  /**
   * A player on the latest committed scenario state this instance knows: read or written by it, or its
   * own (`live`). Fired steps never un-fire, so what it says has fired has fired for every instance; what
   * it says has not may have fired elsewhere since, and is checked against the database.
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
   * has not fired. A call that cannot fire anything is decided on `seen`, with no statement:
   * what the local stage does in memory.
   */
  const mayFire = (method: string) =>
    callSteps.some((name) => !firedIn(seen, name) && (name !== 'unavailable' || method === 'POST'));
  /**
   * Tokens this instance has seen, by value. A token changes once at most: the revocation revokes one,
   * written with the state that says it fired. Until this instance has seen the revocation fired, every
   * call that could meet a revoked token plays through `withScenarios`, which trusts a token only with a
   * state that says no revocation fired (and writes nothing unless the row still holds that state), and
   * reads it afresh otherwise; once it has seen it committed, the cache starts over from what the
   * database says, and those tokens (`fresh`) can be trusted with no statement, since nothing revokes a
   * token any more. `generation` keeps out a lookup that began before.
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
  /**
   * The run's scenario state as this instance last read or wrote it (committed then), where instances
   * share the database: the state its next write expects to replace. Undefined once a write found the
   * row changed (another instance played a step): the next call reads it again.
   */
  let known: ScenarioState | undefined = live ? undefined : run.state;
  /** Calls of this instance waiting to play: they play one at a time, in arrival order. */
  let turn: Promise<unknown> = Promise.resolve();
  /**
   * Plays `change` on the run's scenario state where instances share the database, optimistically: the
   * state is the one this instance last knew (`known`), or read afresh (with `issued`'s token as the
   * database has it) when it knows none or when the token may have been revoked since; the new state is
   * written only if the row still holds the state it was played on (one statement, grouped with other
   * runs' by the journal, its token's revocation in the same statement), and played again on what the
   * row holds when it does not (another instance played meanwhile). A call that changes nothing is
   * decided on a state read in the same attempt, so no decision rests on a state another instance has
   * moved on from. No lock is held between round trips: a call costs one statement while it fires
   * nothing another instance saw first.
   *
   * The calls of this instance queue here, so that each can see what the one before it learnt (`skip`:
   * it need not play any more) before it costs a statement, and they never conflict with each other.
   */
  async function withScenarios<T>(
    change: (player: ScenarioPlayer, token: IssuedToken | undefined) => T,
    skip?: () => { value: T } | undefined,
    issued?: IssuedToken,
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
      // The token this instance holds is the database's while no revocation fired in the state the
      // write expects (the revocation writes the token with the state), or once it is `fresh`.
      const tokenCurrent = (state: ScenarioState) =>
        !issued ||
        !run.enabled.has('revocation') ||
        !firedIn(playScenarios(run.enabled, run.grant, state), 'revocation') ||
        (revocationSeen && fresh.has(issued));
      let base: { state: ScenarioState; token: IssuedToken | undefined; read: boolean } | undefined =
        known && tokenCurrent(known) ? { state: known, token: issued, read: false } : undefined;
      for (let attempt = 1; ; attempt += 1) {
        if (attempt > maxPlayAttempts)
          throw new Error(
            `run ${id}: the scenario state changed under each of ${maxPlayAttempts} attempts to play a call; expected other instances to let one through`,
          );
        base ??= await readScenarios(issued);
        const player = playScenarios(run.enabled, run.grant, base.state);
        const before = JSON.stringify(player.state());
        // A copy: revoking sets `revokedAt` on it, and an attempt that loses keeps nothing.
        const token = base.token && { ...base.token };
        const wasRevoked = token?.revokedAt !== undefined;
        const result = change(player, token);
        const state = player.state();
        const after = JSON.stringify(state);
        if (after === before) {
          // Nothing to write: the decision stands if the state it rests on was read just now.
          if (base.read) return result;
          base = undefined;
          continue;
        }
        const revoked = token && !wasRevoked && token.revokedAt !== undefined ? token : undefined;
        const written = await journal.play(id, {
          before,
          after,
          ...(revoked && {
            revoked: { number: Number(revoked.ref.slice(1)), token: JSON.stringify(revoked) },
          }),
        });
        if (written) {
          // Committed: what it fired is now every instance's (and stays so).
          known = state;
          learn(state);
          return result;
        }
        // Another instance played first (or the run closed): read what the row holds and play again.
        known = undefined;
        base = undefined;
      }
    } finally {
      done();
    }
  }
  /** The run's scenario state and `issued`'s token as the database holds them now; refused once it is not open. */
  async function readScenarios(issued: IssuedToken | undefined) {
    const [row] = await db.query<{ scenario_state: ScenarioState; open: boolean; token: IssuedToken | null }>(
      `SELECT r.scenario_state, r.status = 'open' AND r.expires_at > now() AS open, t.token
       FROM runs r LEFT JOIN run_tokens t ON t.run_id = r.id AND t.number = $2
       WHERE r.id = $1`,
      [id, issued ? Number(issued.ref.slice(1)) : null],
    );
    if (!row?.open) throw new RunClosedError();
    known = row.scenario_state;
    learn(row.scenario_state);
    return { state: row.scenario_state, token: issued && (row.token ?? issued), read: true };
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
        if (token) {
          found.set(value, token);
          continue;
        }
        const hash = sha256(value);
        // Issued here and still in the journal file (the database has it once the file is drained).
        const pending = journal.pendingToken(id, hash);
        if (pending !== undefined) found.set(value, JSON.parse(pending) as IssuedToken);
        else hashes.set(hash, value);
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
      const number = await journal.issue(
        id,
        sha256(draft.value),
        JSON.stringify(draft.token),
        run.tokenCount ?? 0,
      );
      if (number === undefined) throw new RunClosedError();
      const issued: IssuedToken = { ref: `T${number}`, ...draft.token };
      if (asked === generation) remember(draft.value, issued);
      return issued;
    },
    async tokenRequested(scopes, at, seq) {
      // The narrowed grant plays once: after it fired, or when this request cannot fire it, no statement.
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
        (player, token) => {
          const injected = player.injectionFor(method, path, token, now);
          if (injected) player.injected(injected, at, seq);
          return injected;
        },
        // The call before it in the queue may have settled what this one needed to play for.
        () => (quiet() ? { value: seen!.injectionFor(method, path, issued, now) } : undefined),
        issued,
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
