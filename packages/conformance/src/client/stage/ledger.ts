import type { IssuedToken, RecordedExchange, ScenarioRecord } from '../session.js';
import { maxOutsideExchanges } from '../session-schema.js';
import type { ScenarioPlayer } from './scenarios.js';
import type { TokenDraft } from './tokens.js';

/** An injected scenario step (a revocation's 401, the throttle's 429, the outage's 503). */
export type Injection = NonNullable<RecordedExchange['injected']>;

/**
 * Everything a stage remembers while it records: exchange numbers, the tokens it issued, the scenario
 * plan as it plays, and the recorded exchanges. The stage on a partner's machine keeps it in memory
 * (`memoryLedger`); a hosted stage keeps it in a database, so that several instances serve one run and
 * a killed instance loses nothing it answered. Every method may be called concurrently.
 */
export interface StageLedger {
  /** Numbers the next exchange (1, 2, …, in arrival order). */
  nextSeq(): Promise<number>;
  /** The issued tokens among these values (a call's bearer, the JWT-shaped runs of a body). */
  tokensByValue(values: readonly string[]): Promise<Map<string, IssuedToken>>;
  /** Registers a token the stage issued and gives it its reference (`T1`, `T2`, …). */
  issue(draft: TokenDraft): Promise<IssuedToken>;
  /**
   * A token request asked for `scopes` (the narrowed grant fires the first time it asks beyond it). The
   * answer, when the narrowed grant narrows this request, is the scopes to grant instead (empty: refuse
   * it invalid_scope): see `ScenarioPlayer.tokenRequested`.
   */
  tokenRequested(
    scopes: readonly string[],
    at: number,
    seq: number,
    // biome-ignore lint/suspicious/noConfusingVoidType: a ledger written before the narrowing answers nothing (it never narrows)
  ): Promise<readonly string[] | undefined | void>;
  /**
   * The step to play on an API call carrying `issued`, if any; a step played is recorded as fired, and a
   * revocation revokes `issued` (its `revokedAt` is set).
   */
  play(
    method: string,
    path: string,
    issued: IssuedToken | undefined,
    now: number,
    at: number,
    seq: number,
  ): Promise<Injection | undefined>;
  /** The API answered a call itself (a 403 insufficient_scope shows the narrowed grant). */
  apiAnswered(status: number, challenge: string | undefined, at: number, seq: number): Promise<void>;
  /** Records an exchange; past the cap it is counted, not kept. Resolves once it is kept for good. */
  record(exchange: RecordedExchange): Promise<void>;
  /**
   * The answer to give instead of recording when a method of this ledger failed with `error` (for a
   * hosted run: the run has ended → 404); undefined for any other error (the stage answers 502 and
   * records it). `headers` go with the answer (a `Retry-After` when the refusal is for a while).
   */
  refusal?(error: unknown): { status: number; body: string; headers?: Record<string, string> } | undefined;
}

/** What a stage recorded, in the order of the session file. */
export interface LedgerContents {
  exchanges: RecordedExchange[];
  tokens: IssuedToken[];
  scenarios: ScenarioRecord[];
  dropped: number;
  /** Exchanges from outside the run past `maxOutsideExchanges`: counted, not kept. */
  outsideDropped?: number;
}

/** A ledger in memory, with what it holds readable at any time (the local stage's). */
export interface MemoryLedger extends StageLedger {
  contents(): LedgerContents;
  /** Exchanges numbered so far. */
  count(): number;
}

/** The local stage's ledger: in this process's memory, up to `maxExchanges` exchanges. */
export function memoryLedger(options: { maxExchanges: number; scenarios: ScenarioPlayer }): MemoryLedger {
  const { maxExchanges, scenarios } = options;
  const exchanges: RecordedExchange[] = [];
  const tokens: IssuedToken[] = [];
  const byValue = new Map<string, IssuedToken>();
  let dropped = 0;
  let outsideKept = 0;
  let outsideDropped = 0;
  let seq = 0;
  return {
    nextSeq: async () => ++seq,
    count: () => seq,
    async tokensByValue(values) {
      const found = new Map<string, IssuedToken>();
      for (const value of values) {
        const issued = byValue.get(value);
        if (issued) found.set(value, issued);
      }
      return found;
    },
    async issue(draft) {
      const issued: IssuedToken = { ref: `T${byValue.size + 1}`, ...draft.token };
      // A token issued past the recording cap is known (its calls are recognised) but not listed.
      if (exchanges.length - outsideKept < maxExchanges) tokens.push(issued);
      byValue.set(draft.value, issued);
      return issued;
    },
    async tokenRequested(scopes, at, number) {
      return scenarios.tokenRequested(scopes, at, number);
    },
    async play(method, path, issued, now, at, number) {
      const injected = scenarios.injectionFor(method, path, issued, now);
      if (injected) scenarios.injected(injected, at, number);
      return injected;
    },
    async apiAnswered(status, challenge, at, number) {
      scenarios.apiAnswered(status, challenge, at, number);
    },
    async record(exchange) {
      if (exchange.outside) {
        if (outsideKept < maxOutsideExchanges) {
          outsideKept += 1;
          exchanges.push(exchange);
        } else outsideDropped += 1;
        return;
      }
      if (exchanges.length - outsideKept < maxExchanges) exchanges.push(exchange);
      else dropped += 1;
    },
    contents: () => ({
      exchanges: [...exchanges].sort((a, b) => a.seq - b.seq),
      tokens: tokens.map((item) => ({ ...item })),
      scenarios: scenarios.records.map((item) => ({ ...item })),
      dropped,
      ...(outsideDropped > 0 && { outsideDropped }),
    }),
  };
}
