import { performance } from 'node:perf_hooks';
import { context } from '@opentelemetry/api';
import { observedStatement } from '../db/batched.js';
import type { Database } from '../db/database.js';
import { StorageUnavailableError } from '../errors.js';
import type { LogLine } from '../observability/logger.js';
import { threadBusy } from '../observability/thread-use.js';
import { type JournalFile, openJournalFile } from './journal-file.js';
import { dataError, described, notStored, type StoreItem, storeEntries } from './store.js';

/** How the journal file fills the database. */
export interface DrainOptions {
  /** How long the first call written waits for others before they go to the database together (ms). */
  drainMs?: number;
  /**
   * Items per statement filling the database from the journal file (default 64): larger statements cost
   * the database less per item, and each holds it for its length (a few milliseconds at 64).
   */
  drainItems?: number;
  /** Calls written and not yet in the database past which calls are refused 503 (the database is stuck). */
  maxPending?: number;
  /** How long written calls may wait for the database while requests keep the thread busy (ms). */
  maxDeferMs?: number;
  /**
   * A drain starts once no call has been written for this long (ms, default 5): after a burst of calls
   * rather than during it, when the database's thread would take a core from the answers. It waits for
   * such a pause `drainMs` at most, then starts anyway.
   */
  quietMs?: number;
  log?: LogLine;
}

/**
 * Recording through the journal file (see journal-file.ts), where one process owns the database: a call is
 * written to the file and answered, the calls of one turn of the event loop in one write(2) (at the end
 * of the turn, before any of them is answered: a burst's calls cost one system call rather than one
 * each), and the calls written meanwhile go
 * to the database together `drainMs` later, off every answer's path, in statements of `drainItems`
 * with a turn of the event loop between them (an embedded database's statement holds this thread).
 * A drain starts in a pause between calls (`quietMs` without one written), when there is one within
 * `drainMs`: on a machine of few cores the database's thread would otherwise take one from a burst's
 * answers (runs started together renew their tokens together, and their calls arrive together).
 * Whether a run may still record is known here (`track`, `settle`) rather than read under its row's
 * lock: this process is the only one that ends runs.
 *
 * A class rather than one closure: each step (scheduling, draining, one statement, writing, flushing) is a
 * method of its own.
 */
export function journalFileDrain(db: Database, dir: string, options: DrainOptions): JournalFileDrain {
  return new JournalFileDrain(db, openJournalFile(dir), options);
}

/** The outcome every write of one turn waits for, and how `writeOut` settles it. */
type Turn = { written: Promise<boolean>; resolve: (kept: boolean) => void; reject: (error: unknown) => void };

/** A token written to the file and not yet committed: its number and its JSON as it is now. */
type UnsettledToken = { number: number; token: string };

export class JournalFileDrain {
  private readonly drainMs: number;
  private readonly drainItems: number;
  private readonly maxPending: number;
  private readonly maxDeferMs: number;
  private readonly quietMs: number;
  private readonly log: LogLine;
  /** Runs that may record, until when (epoch ms). */
  private readonly open = new Map<string, number>();
  /** Written to the file, not yet committed to the database, in the order written. */
  private pending: StoreItem[] = [];
  /**
   * Tokens written to the file and not yet committed, by run and by the SHA-256 of their value: their
   * number and their JSON as it is now (its reference added when one is looked up, rarely: a stage
   * remembers the tokens it issued).
   */
  private readonly unsettledTokens = new Map<string, Map<string, UnsettledToken>>();
  private timer: NodeJS.Timeout | undefined;
  private draining: Promise<void> | undefined;
  private failures = 0;
  private closed = false;
  /** Whether requests kept the thread busy since the last look: a drain then waits. */
  private readonly busy = threadBusy();
  private oldestPendingAt = 0;
  /** When the last call was written (performance.now()). */
  private lastWriteAt = 0;
  /** Calls to write at the end of this turn of the event loop (`writeOut`). */
  private unwritten: StoreItem[] = [];
  /** What every write of this turn waits for: one outcome for all of them, settled by `writeOut`. */
  private turn: Turn | undefined;

  constructor(
    private readonly db: Database,
    private readonly file: JournalFile,
    options: DrainOptions,
  ) {
    this.drainMs = options.drainMs ?? 200;
    this.drainItems = options.drainItems ?? 64;
    this.maxPending = options.maxPending ?? 50_000;
    this.maxDeferMs = options.maxDeferMs ?? 10_000;
    this.quietMs = options.quietMs ?? 5;
    this.log = options.log ?? (() => {});
  }

  /**
   * Writes a call, or a token issued or revoked, of a run that may record: true once it is in the file
   * (at the end of this turn of the event loop, with the others of the turn), false when it may not.
   */
  write(item: StoreItem): Promise<boolean> {
    const until = this.open.get(item.runId);
    if (this.closed || until === undefined || Date.now() >= until) return Promise.resolve(false);
    const waiting = this.pending.length + this.unwritten.length;
    if (waiting >= this.maxPending)
      return Promise.reject(
        new StorageUnavailableError(
          this.db.where,
          new Error(`${waiting} answered calls wait for the database`),
        ),
      );
    item.writtenAt = performance.now();
    this.lastWriteAt = item.writtenAt;
    item.context = context.active();
    if (!this.turn) {
      let settle!: Pick<Turn, 'resolve' | 'reject'>;
      const written = new Promise<boolean>((resolve, reject) => {
        settle = { resolve, reject };
      });
      this.turn = { written, ...settle };
      setImmediate(() => this.writeOut());
    }
    this.unwritten.push(item);
    return this.turn.written;
  }

  /**
   * Writes the calls of this turn to the file in one write, then tells their writers (a failed write
   * fails them all: none is answered, none is pending). Also called before a settle or a close, so that
   * what was written before it is in what they flush.
   */
  private writeOut(): void {
    const turn = this.turn;
    if (!turn) return;
    const items = this.unwritten;
    this.unwritten = [];
    this.turn = undefined;
    try {
      this.file.append(items);
    } catch (error) {
      turn.reject(new StorageUnavailableError(this.db.where, error));
      return;
    }
    if (this.pending.length === 0 && !this.draining) this.oldestPendingAt = Date.now();
    for (const item of items) {
      this.pending.push(item);
      if (item.kind === 'issued') {
        const run = this.unsettledTokens.get(item.runId) ?? new Map<string, UnsettledToken>();
        this.unsettledTokens.set(item.runId, run);
        run.set(item.sha256, { number: item.number, token: item.token });
      } else if (item.kind === 'revoked') {
        for (const entry of this.unsettledTokens.get(item.runId)?.values() ?? [])
          if (entry.number === item.number) entry.token = item.token;
      }
    }
    this.schedule();
    turn.resolve(true);
  }

  pendingToken(runId: string, sha256: string): string | undefined {
    const found = this.unsettledTokens.get(runId)?.get(sha256);
    return found && JSON.stringify({ ...(JSON.parse(found.token) as object), ref: `T${found.number}` });
  }

  track(runId: string, expiresAt: number): void {
    this.open.set(runId, expiresAt);
  }

  async settle(runId: string): Promise<void> {
    this.open.delete(runId);
    this.writeOut();
    await this.flush();
  }

  async close(): Promise<void> {
    this.writeOut();
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush();
    await this.file.close(this.pending.length === 0);
  }

  private quiet(): boolean {
    return performance.now() - this.lastWriteAt >= this.quietMs;
  }

  private schedule(delay = this.drainMs, waitingSince?: number): void {
    if (this.timer || this.draining || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      // Calls are being written (a burst): wait for a pause, `drainMs` at most.
      const since = waitingSince ?? performance.now();
      if (!this.quiet() && performance.now() - since < this.drainMs) {
        this.schedule(this.quietMs, since);
        return;
      }
      // While requests keep this thread busy (a burst of calls), what is written waits in the file,
      // up to `maxDeferMs` and half of `maxPending`: the drain runs when the burst has passed.
      if (
        this.busy() &&
        Date.now() - this.oldestPendingAt < this.maxDeferMs &&
        this.pending.length < this.maxPending / 2
      ) {
        this.schedule();
        return;
      }
      void this.drain();
    }, delay);
  }

  /**
   * Commits what is written; on a failure, keeps it (file and memory) and tries again later. What is
   * written while it stores goes on in the same drain only when it fills a statement (or with `all`):
   * less waits for the next drain, `drainMs` later, so that statements stay full rather than following
   * the calls a few at a time (each costs the database's thread a statement, and a segment of the file).
   * A statement's worth goes on once calls pause (`quietMs`), not in the middle of a burst.
   */
  private drain(all = false): Promise<void> {
    if (this.draining) return this.draining;
    if (this.pending.length === 0) return Promise.resolve();
    let resume = false;
    const running = (async () => {
      try {
        while (this.pending.length > 0) {
          await this.drainBatch();
          if (!all && this.pending.length < this.drainItems) break;
          // A statement's worth written meanwhile goes on in this drain, once calls pause.
          if (!all && !this.quiet()) {
            resume = true;
            break;
          }
          if (this.pending.length > 0) await new Promise<void>((resolve) => setImmediate(resolve));
        }
      } catch (error) {
        this.failures += 1;
        this.log(
          `recording answered calls from the journal file failed (${this.failures} in a row), retrying: ${(error as Error).message}`,
        );
      }
    })().finally(() => {
      // (Asynchronous: `draining` is this drain until it has ended.)
      this.draining = undefined;
      if (this.pending.length > 0)
        this.schedule(resume ? this.quietMs : Math.min(5000, this.drainMs * 2 ** Math.min(this.failures, 8)));
    });
    this.draining = running;
    return running;
  }

  /** Commits what is pending now, a statement of `drainItems` at a time, and deletes the file's segments. */
  private async drainBatch(): Promise<void> {
    // By run (in order within each), so that a statement touches few runs' rows.
    const batch = this.pending.sort((a, b) => (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0));
    this.pending = [];
    const release = this.file.rotate();
    // After a failure, part of what goes again may be in already.
    const check = this.failures > 0;
    try {
      for (let index = 0; index < batch.length; index += this.drainItems) {
        await this.storeChunk(batch.slice(index, index + this.drainItems), check);
        // Requests read while the statement held the thread are served before the next one.
        if (index + this.drainItems < batch.length)
          await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } catch (error) {
      // Nothing of the failed chunk's statement was kept; the chunks before it were, and go again:
      // a run's numbers already recorded are skipped (see storeChunk).
      this.pending = batch.concat(this.pending);
      throw error;
    }
    await release();
    this.failures = 0;
  }

  /**
   * One statement of journal entries; entries already in the database (a statement that committed
   * before a failure of the next) are left out, and a data error goes item by item.
   */
  private async storeChunk(items: StoreItem[], check: boolean): Promise<void> {
    const fresh = check ? await notStored(this.db, items) : items;
    if (fresh.length === 0) return;
    // Observed and traced as the grouped record statement is (batch "record"), the wait from the write.
    try {
      await observedStatement(
        'record',
        fresh.map((item) => ({ queuedAt: item.writtenAt, context: item.context })),
        () => storeEntries(this.db, fresh, false),
      );
    } catch (error) {
      if (fresh.length === 1 || !dataError(error)) {
        if (fresh.length === 1 && dataError(error)) {
          this.log(
            `run ${fresh[0]!.runId}: ${described(fresh[0]!)} cannot be stored and is left out: ${(error as Error).message}`,
          );
          this.settled(fresh);
          return;
        }
        throw error;
      }
      for (const item of fresh) await this.storeChunk([item], true);
      return;
    }
    this.settled(fresh);
  }

  /** Tokens committed (or left out): read from the database from now on. */
  private settled(items: readonly StoreItem[]): void {
    for (const item of items) {
      if (item.kind !== 'issued') continue;
      const run = this.unsettledTokens.get(item.runId);
      if (run?.get(item.sha256)?.number === item.number) run.delete(item.sha256);
      if (run?.size === 0) this.unsettledTokens.delete(item.runId);
    }
  }

  /** Every call written so far is committed (waits for a drain running, then drains the rest). */
  private async flush(): Promise<void> {
    for (let attempt = 0; this.pending.length > 0 || this.draining; attempt += 1) {
      if (this.draining) await this.draining;
      else await this.drain(true);
      if (this.pending.length > 0 && attempt >= 3)
        throw new StorageUnavailableError(this.db.where, new Error('answered calls could not be recorded'));
    }
  }
}
