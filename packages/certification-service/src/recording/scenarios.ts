import {
  grantsEveryScope,
  type IssuedToken,
  narrowedGrantScopes,
  playScenarios,
  type ScenarioName,
  type ScenarioPlayer,
  type ScenarioState,
  type StageLedger,
} from '@partner-lending/conformance';
import type { Database } from '../db/database.js';
import { InternalError } from '../errors.js';
import type { Journal } from './journal.js';
import { RunClosedError } from './run-closed.js';
import type { RunTokens } from './run-tokens.js';

/**
 * Attempts to play one call where instances share the database before giving up: each attempt that
 * loses is one another instance won, so this is reached only if the run's other instances play
 * hundreds of calls while this one plays one.
 */
const maxPlayAttempts = 200;

/** What the scenario play of a run needs to know of it. */
export interface ScenarioRun {
  id: string;
  enabled: ReadonlySet<ScenarioName>;
  grant: readonly string[];
  /** The run's scenario state as its row said when the stage opened. */
  state?: ScenarioState;
}

/** A run's scenario plan as a stage ledger plays it: once, whichever instance a call reaches. */
export interface RunScenarios {
  tokenRequested: StageLedger['tokenRequested'];
  play: StageLedger['play'];
  apiAnswered: StageLedger['apiAnswered'];
  /**
   * Playing in memory: the run's scenario state (JSON) when it changed since it was last taken, to be
   * written with the call being recorded; undefined otherwise.
   */
  takeState(): string | undefined;
  /** The record that took the state failed: the state goes with the next one. */
  untake(): void;
}

const firedIn = (player: ScenarioPlayer | undefined, name: ScenarioName) =>
  player?.records.find((item) => item.name === name)?.firedAt !== undefined;
const firedCount = (player: ScenarioPlayer | undefined) =>
  player ? player.records.filter((item) => item.firedAt !== undefined).length : -1;

/**
 * What this instance knows of a run's scenarios: `seen`, a player on the latest committed scenario
 * state this instance knows (read or written by it, or its own in memory). Fired steps never un-fire, so
 * what it says has fired has fired for every instance; what it says has not may have fired elsewhere
 * since, and is checked against the database.
 */
export function scenarioSight(run: ScenarioRun, live: ScenarioPlayer | undefined) {
  /** The steps an API call can trigger that this run plays. */
  const callSteps = (['revocation', 'throttle', 'unavailable'] as const).filter((name) =>
    run.enabled.has(name),
  );
  let seen: ScenarioPlayer | undefined = live
    ? playScenarios(run.enabled, run.grant, live.state())
    : run.state
      ? playScenarios(run.enabled, run.grant, run.state)
      : callSteps.length === 0
        ? playScenarios(run.enabled, run.grant)
        : undefined;
  return {
    get seen() {
      return seen;
    },
    /**
     * Whether a call of `method` might fire a step, as far as this instance knows: while the revocation
     * or the throttle has not fired (they count eligible calls), any call; after, only a POST while the
     * outage has not fired. A call that cannot fire anything is decided on `seen`, with no statement:
     * what the local stage does in memory.
     */
    mayFire: (method: string) =>
      callSteps.some((name) => !firedIn(seen, name) && (name !== 'unavailable' || method === 'POST')),
    /** The narrowed grant has fired (as far as this instance knows). */
    narrowedFired: () => firedIn(seen, 'narrowed-grant'),
    /** The revocation has fired (as far as this instance knows). */
    revocationFired: () => firedIn(seen, 'revocation'),
    /** `live` changed: `seen` follows it once a step fired. */
    followLive() {
      if (live && firedCount(live) !== firedCount(seen))
        seen = playScenarios(run.enabled, run.grant, live.state());
    },
    /** A committed scenario state: kept as `seen` when it knows more; answers its player. */
    learn(state: ScenarioState): ScenarioPlayer {
      const player = playScenarios(run.enabled, run.grant, state);
      if (firedCount(player) >= firedCount(seen)) seen = player;
      return player;
    },
  };
}

type Sight = ReturnType<typeof scenarioSight>;

/**
 * The run's scenario play: where this instance alone serves the run (the embedded store, which one
 * process owns), the plan plays here, in memory, as on the local stage: `live` is the run's scenario
 * state, and it is written with the next exchange recorded (`takeState`), in the same statement,
 * committed before that answer leaves; a revoked token is written at once. Where instances share the
 * database, the state is the database's, written only over the state it was played on (`sharedPlay`).
 */
export function runScenarios(
  db: Database,
  journal: Journal,
  run: ScenarioRun,
  live: ScenarioPlayer | undefined,
  sight: Sight,
  tokens: RunTokens,
): RunScenarios {
  const inMemory = live && memoryPlay(journal, run.id, live, sight);
  const shared = live ? undefined : sharedPlay(db, journal, run, sight, tokens);
  /** A client authorised for every scope meets the narrowed grant at its token endpoint, once. */
  const everyScope = grantsEveryScope(run.grant);
  const skipNarrowed = () => (sight.narrowedFired() ? { value: undefined } : undefined);
  return {
    async tokenRequested(scopes, at, seq) {
      // The narrowed grant plays once: after it fired, or when this request cannot fire it, no statement.
      if (!run.enabled.has('narrowed-grant') || sight.narrowedFired()) return undefined;
      if (!everyScope && scopes.every((scope) => run.grant.includes(scope))) return undefined;
      // Authorised for every scope: only a request beyond the narrowed grant's scopes is narrowed.
      if (everyScope) {
        const asked = scopes.length > 0 ? scopes.filter((scope) => run.grant.includes(scope)) : run.grant;
        if (asked.every((scope) => narrowedGrantScopes.includes(scope))) return undefined;
      }
      if (inMemory) return inMemory.run((player) => player.tokenRequested(scopes, at, seq));
      return shared!.withScenarios((player) => player.tokenRequested(scopes, at, seq), skipNarrowed);
    },
    async play(method, path, issued, now, at, seq) {
      if (!issued) return undefined;
      if (inMemory) return inMemory.play(method, path, issued, now, at, seq);
      return shared!.play(method, path, issued, now, at, seq);
    },
    async apiAnswered(status, challenge, at, seq) {
      if (status !== 403 || !run.enabled.has('narrowed-grant') || sight.narrowedFired()) return;
      if (!/insufficient_scope/.test(challenge ?? '')) return;
      if (inMemory) return inMemory.run((player) => player.apiAnswered(status, challenge, at, seq));
      await shared!.withScenarios((player) => player.apiAnswered(status, challenge, at, seq), skipNarrowed);
    },
    takeState: () => inMemory?.takeState(),
    untake: () => inMemory?.untake(),
  };
}

/** The plan played in memory (this instance alone serves the run). */
function memoryPlay(journal: Journal, id: string, live: ScenarioPlayer, sight: Sight) {
  let dirty = false;
  /** Tokens this instance revoked, by reference: a copy read before is corrected. */
  const revokedRefs = new Map<string, number>();
  /** `live` changed: written with the next record. */
  const changed = () => {
    dirty = true;
    sight.followLive();
  };
  return {
    run<T>(step: (player: ScenarioPlayer) => T): T {
      const answer = step(live);
      changed();
      return answer;
    },
    async play(method: string, path: string, issued: IssuedToken, now: number, at: number, seq: number) {
      const revokedAt = revokedRefs.get(issued.ref);
      if (revokedAt !== undefined && issued.revokedAt === undefined) issued.revokedAt = revokedAt;
      if (!sight.mayFire(method)) return sight.seen!.injectionFor(method, path, issued, now);
      const wasRevoked = issued.revokedAt !== undefined;
      const injected = live.injectionFor(method, path, issued, now);
      if (injected) live.injected(injected, at, seq);
      changed();
      if (injected === 'revoked' && !wasRevoked && issued.revokedAt !== undefined) {
        revokedRefs.set(issued.ref, issued.revokedAt);
        await journal.revoke(id, Number(issued.ref.slice(1)), JSON.stringify(issued));
      }
      return injected;
    },
    takeState(): string | undefined {
      if (!dirty) return undefined;
      dirty = false;
      return JSON.stringify(live.state());
    },
    untake() {
      dirty = true;
    },
  };
}

/**
 * The plan played where instances share the database. `known` is the run's scenario state as this
 * instance last read or wrote it (committed then): the state its next write expects to replace;
 * undefined once a write found the row changed (another instance played a step): the next call reads it
 * again.
 */
function sharedPlay(db: Database, journal: Journal, run: ScenarioRun, sight: Sight, tokens: RunTokens) {
  const { id } = run;
  /** Calls of this instance waiting to play: they play one at a time, in arrival order. */
  let turn: Promise<unknown> = Promise.resolve();
  /** A committed scenario state: `seen` follows it; the revocation seen clears the tokens. */
  const learn = (state: ScenarioState) => {
    if (firedIn(sight.learn(state), 'revocation')) tokens.revocationCommitted();
  };
  /** The run's scenario state and `issued`'s token as the database holds them now; refused once it is not open. */
  async function readScenarios(issued: IssuedToken | undefined) {
    const [row] = await db.query<{ scenario_state: ScenarioState; open: boolean; token: IssuedToken | null }>(
      `SELECT s.state AS scenario_state, r.status = 'open' AND r.expires_at > now() AS open, t.token
       FROM runs r JOIN run_scenarios s ON s.run_id = r.id
       LEFT JOIN run_tokens t ON t.run_id = r.id AND t.number = $2
       WHERE r.id = $1`,
      [id, issued ? Number(issued.ref.slice(1)) : null],
      { prepare: true },
    );
    if (!row?.open) throw new RunClosedError();
    if (issued && row.token?.revokedAt !== undefined) ctx.revoked.add(issued.ref);
    ctx.known = row.scenario_state;
    learn(row.scenario_state);
    return { state: row.scenario_state, token: issued && (row.token ?? issued), read: true };
  }
  const ctx: SharedContext = {
    run,
    journal,
    tokens,
    known: run.state,
    revoked: new Set(),
    read: readScenarios,
    learn,
  };
  /**
   * Plays `change` on the run's scenario state, optimistically: the state is the one this instance last
   * knew (`known`), or read afresh (with `issued`'s token as the database has it) when it knows none or
   * when the token may have been revoked since; the new state is written only if the row still holds the
   * state it was played on (one statement, grouped with other runs' by the journal, its token's
   * revocation in the same statement), and played again on what the row holds when it does not (another
   * instance played meanwhile). A call that changes nothing is decided on a state read in the same
   * attempt, so no decision rests on a state another instance has moved on from. No lock is held between
   * round trips: a call costs one statement while it fires nothing another instance saw first.
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
      return await attempts(ctx, change, issued);
    } finally {
      done();
    }
  }
  return {
    withScenarios,
    play(method: string, path: string, issued: IssuedToken, now: number, at: number, seq: number) {
      // Decided with no statement: a token revoked in a committed state (read with its revocation, or
      // one this instance saw revoked) stays revoked whatever the state, and its call changes nothing (it
      // is not an eligible call; the revocation fired); a call that cannot fire a step, with a token
      // known to be current, is decided on the state last seen. Checked on arrival and again when the
      // call's turn comes: the call before it in the queue may have settled what this one needed.
      const decided = () =>
        issued.revokedAt !== undefined || ctx.revoked.has(issued.ref)
          ? { value: 'revoked' as const }
          : sight.seen && !sight.mayFire(method) && tokens.trusted(issued)
            ? { value: sight.seen.injectionFor(method, path, issued, now) }
            : undefined;
      const settled = decided();
      if (settled) return Promise.resolve(settled.value);
      return withScenarios(
        (player, token) => {
          const injected = player.injectionFor(method, path, token, now);
          if (injected) player.injected(injected, at, seq);
          return injected;
        },
        decided,
        issued,
      );
    },
  };
}

/** What the attempts of a call on the shared row use (see `sharedPlay`). */
interface SharedContext {
  run: ScenarioRun;
  journal: Journal;
  tokens: RunTokens;
  /** The run's scenario state as this instance last read or wrote it (see `sharedPlay`). */
  known: ScenarioState | undefined;
  /** The references of the run's tokens this instance saw revoked in a committed state. */
  revoked: Set<string>;
  /** The run's scenario state and a token as the database holds them now (`known` follows). */
  read(
    issued: IssuedToken | undefined,
  ): Promise<{ state: ScenarioState; token: IssuedToken | undefined; read: boolean }>;
  /** A committed scenario state (see `learn` in `sharedPlay`). */
  learn(state: ScenarioState): void;
}

/** The attempts of one call on the shared row, in its turn (see `withScenarios` in `sharedPlay`). */
async function attempts<T>(
  ctx: SharedContext,
  change: (player: ScenarioPlayer, token: IssuedToken | undefined) => T,
  issued: IssuedToken | undefined,
): Promise<T> {
  // The token this instance holds is the database's while no revocation fired in the state the
  // write expects (the revocation writes the token with the state), or once it is `fresh`.
  const tokenCurrent = (state: ScenarioState) =>
    !issued ||
    !ctx.run.enabled.has('revocation') ||
    !firedIn(playScenarios(ctx.run.enabled, ctx.run.grant, state), 'revocation') ||
    ctx.tokens.trusted(issued);
  let base: { state: ScenarioState; token: IssuedToken | undefined; read: boolean } | undefined =
    ctx.known && tokenCurrent(ctx.known) ? { state: ctx.known, token: issued, read: false } : undefined;
  for (let attempt = 1; ; attempt += 1) {
    if (attempt > maxPlayAttempts)
      throw new InternalError(
        `run ${ctx.run.id}: the scenario state changed under each of ${maxPlayAttempts} attempts to play a call; expected other instances to let one through`,
      );
    base ??= await ctx.read(issued);
    const player = playScenarios(ctx.run.enabled, ctx.run.grant, base.state);
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
    const written = await ctx.journal.play(ctx.run.id, {
      before,
      after,
      ...(revoked && {
        revoked: { number: Number(revoked.ref.slice(1)), token: JSON.stringify(revoked) },
      }),
    });
    if (written) {
      // Committed: what it fired is now every instance's (and stays so).
      if (revoked) ctx.revoked.add(revoked.ref);
      ctx.known = state;
      ctx.learn(state);
      return result;
    }
    // Another instance played first (or the run closed): read what the row holds and play again.
    ctx.known = undefined;
    base = undefined;
  }
}
