import type { Database } from '../db/database.js';
import { InternalError } from '../errors.js';
import { type DrainOptions, journalFileDrain } from './drain.js';
import { sharedStatements } from './statements.js';

/**
 * The statements every call of every run makes, shared by the runs an instance serves: numbering the
 * call and recording it. Each is grouped (see `batched`): under load, one statement numbers or records
 * the calls of many runs at once; a call alone goes out at once.
 *
 * Numbering is the database's when instances share it (PostgreSQL: a call may reach any of them). The
 * embedded store belongs to one process (its directory is locked), so there this instance numbers in
 * memory, from the highest number recorded, and a call costs one statement, not two.
 */
export interface Journal {
  /** True when this instance numbers in memory (it alone serves the database's runs). */
  readonly exclusive: boolean;
  /**
   * The next sequence number of an open run (1, 2, … in arrival order); undefined once it is not open.
   * `recorded` is the run's number as its row says (read when its stage opened): where this instance
   * numbers, it counts on from there.
   */
  nextSeq(runId: string, recorded: number): Promise<number | undefined>;
  /**
   * Records an exchange of an open run (kept up to the run's cap, counted past it), committed when this
   * resolves; false when the run is not open (judging has claimed it: the call must not be answered).
   * `scenarioState` (JSON), where this instance plays the run's scenarios in memory, is the run's
   * scenario state as it stands after this call: written with the record, the latest of the batch.
   */
  record(runId: string, seq: number, exchange: string, scenarioState?: string): Promise<boolean>;
  /**
   * Stores a token the run's stage issued, by hash, and gives it the run's next token number; undefined
   * once the run is not open. Grouped like `record`: the tokens of many runs in one statement. With a
   * journal file, numbered in memory (on from `recorded`, the run's token count when its stage opened)
   * and written to the file like a call: the token's answer does not wait for the database.
   */
  issue(runId: string, valueSha256: string, token: string, recorded: number): Promise<number | undefined>;
  /**
   * Writes a token the run's plan revoked (its JSON, by its number) while the run is open; grouped too,
   * or written to the journal file.
   */
  revoke(runId: string, number: number, token: string): Promise<void>;
  /**
   * A token of the run's written to the journal file and not yet in the database (its JSON as it is
   * now, with its reference), by the SHA-256 of its value; undefined otherwise (read the database).
   */
  pendingToken(runId: string, valueSha256: string): string | undefined;
  /**
   * Where instances share the database: writes a run's scenario state `after` (JSON) if the run is open
   * and its row still holds `before` (compared as JSON values), with the token the call revoked, if
   * any, in the same statement; true when written, false when the row holds another state (another
   * instance played first) or the run is not open. Grouped with other runs' in one statement, whose
   * commit need not wait for the disk (the call's record, committed after it, flushes it too).
   */
  play(
    runId: string,
    change: { before: string; after: string; revoked?: { number: number; token: string } },
  ): Promise<boolean>;
  /** The run's stage closed on this instance: its numbers are forgotten. */
  forget(runId: string): void;
  /**
   * With a journal file (`journalDir`): the run's calls may be recorded until `expiresAt` (epoch ms), or
   * until `settle`. (Without one, the statement itself checks that the run is open.)
   */
  track(runId: string, expiresAt: number): void;
  /**
   * The run is being judged: no later call of it is recorded, and every call answered before is in the
   * database when this resolves.
   */
  settle(runId: string): Promise<void>;
  /** Every call answered is in the database (the service is stopping); nothing more is recorded. */
  close(): Promise<void>;
}

export interface JournalOptions extends DrainOptions {
  /**
   * The embedded store's journal file directory (see journal-file.ts): a call is answered once its exchange is
   * written there, and the database is filled from it in the background. Only for a database one process
   * owns; without it each call waits for its statement.
   */
  journalDir?: string;
}

export function openJournal(db: Database, options: JournalOptions = {}): Journal {
  const exclusive = db.exclusive;
  const file =
    options.journalDir !== undefined && exclusive
      ? journalFileDrain(db, options.journalDir, options)
      : undefined;
  /** Where this instance numbers: the last number given, by run. */
  const numbered = new Map<string, number>();
  /** With a journal file: the last token number given, by run. */
  const tokenNumbers = new Map<string, number>();
  const statements = sharedStatements(db);

  return {
    exclusive,
    async nextSeq(runId, recorded) {
      if (!exclusive) return statements.number(runId);
      // A run that is not open any more is refused when its call is recorded (or, once its stage is
      // closed, before it is even read).
      const seq = Math.max(numbered.get(runId) ?? 0, recorded) + 1;
      numbered.set(runId, seq);
      return seq;
    },
    record: (runId, seq, exchange, scenarioState) =>
      // An exchange is JSON on one line (as `JSON.stringify` writes it): the journal file holds one a
      // line, and a statement takes a batch's exchanges as one text, a line each (`exchangesText`).
      exchange.includes('\n')
        ? Promise.reject(new InternalError(`run ${runId}: exchange ${seq} is not JSON on one line`))
        : file
          ? file.write({ runId, seq, exchange, scenarioState })
          : statements.record({ runId, seq, exchange, scenarioState }),
    async issue(runId, sha256, token, recorded) {
      if (!file) return statements.issue({ runId, sha256, token });
      const number = Math.max(tokenNumbers.get(runId) ?? 0, recorded) + 1;
      if (!(await file.write({ kind: 'issued', runId, number, sha256, token }))) return undefined;
      tokenNumbers.set(runId, number);
      return number;
    },
    revoke: async (runId, number, token) => {
      if (!file) return statements.revoke({ runId, number, token });
      // Not open any more: judging has what it needs (nothing is answered after).
      await file.write({ kind: 'revoked', runId, number, token });
    },
    pendingToken: (runId, sha256) => file?.pendingToken(runId, sha256),
    play: (runId, { before, after, revoked }) =>
      statements.play({
        runId,
        before,
        after,
        number: revoked?.number ?? null,
        token: revoked?.token ?? null,
      }),
    forget: (runId) => {
      numbered.delete(runId);
      tokenNumbers.delete(runId);
    },
    track: (runId, expiresAt) => file?.track(runId, expiresAt),
    settle: async (runId) => file?.settle(runId),
    close: async () => file?.close(),
  };
}
