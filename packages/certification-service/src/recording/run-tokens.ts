import { createHash } from 'node:crypto';
import type { IssuedToken, StageLedger } from '@partner-lending/conformance';
import type { Database } from '../db/database.js';
import type { Journal } from './journal.js';
import { RunClosedError } from './run-closed.js';

export const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Tokens of a run an instance keeps in memory at most (past it, it forgets them all and asks again). */
const maxCachedTokens = 1000;

/** The tokens a run's stage issued, as one instance knows them. */
export interface RunTokens {
  /** The run's tokens by value: this instance's, the journal file's, or the database's. */
  tokensByValue: StageLedger['tokensByValue'];
  /** Stores a token the stage issues, with the run's next token number. */
  issue: StageLedger['issue'];
  /**
   * True when `token` can be trusted with no statement: this instance saw the revocation committed (or
   * none can fire), and read or issued the token since.
   */
  trusted(token: IssuedToken): boolean;
  /** Whether this instance knows that no token of the run changes any more. */
  revocationSeen(): boolean;
  /** The revocation is committed: the cache starts over from what the database says. */
  revocationCommitted(): void;
}

/**
 * Tokens this instance has seen, by value. A token changes once at most: the revocation revokes one,
 * written with the state that says it fired. Until this instance has seen the revocation fired, every
 * call that could meet a revoked token plays through the shared play (scenarios.ts), which trusts a
 * token only with a state that says no revocation fired (and writes nothing unless the row still holds
 * that state), and reads it afresh otherwise; once it has seen it committed, the cache starts over from
 * what the database says, and those tokens (`fresh`) can be trusted with no statement, since nothing
 * revokes a token any more. `generation` keeps out a lookup that began before.
 *
 * `revocationSeen`: with no revocation in the plan, or the revocation fired before the stage opened here,
 * no token changes any more: every token this instance sees is current.
 */
export function runTokens(
  db: Database,
  journal: Journal,
  run: { id: string; tokenCount?: number },
  revocationSeen: boolean,
): RunTokens {
  const { id } = run;
  const tokens = new Map<string, IssuedToken>();
  let fresh = new WeakSet<IssuedToken>();
  let generation = 0;
  const remember = (value: string, token: IssuedToken) => {
    if (tokens.size >= maxCachedTokens) tokens.clear();
    tokens.set(value, token);
    fresh.add(token);
  };
  return {
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
        { prepare: true },
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
    trusted: (token) => revocationSeen && fresh.has(token),
    revocationSeen: () => revocationSeen,
    revocationCommitted() {
      if (revocationSeen) return;
      revocationSeen = true;
      tokens.clear();
      fresh = new WeakSet();
      generation += 1;
    },
  };
}
