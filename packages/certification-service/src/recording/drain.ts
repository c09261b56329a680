import { performance } from 'node:perf_hooks';
import { context } from '@opentelemetry/api';
import { observedStatement } from '../db/batched.js';
import type { Database } from '../db/database.js';
import { StorageUnavailableError } from '../errors.js';
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
  log?: (line: string) => void;
}

/**
 * Recording through the journal file (see journal-file.ts), where one process owns the database: a call is
 * written to the file (write(2), a few microseconds) and answered, and the calls written meanwhile go
 * to the database together `drainMs` later, off every answer's path, in statements of `drainItems`
 * with a turn of the event loop between them (an embedded database's statement holds this thread).
 * A drain starts in a pause between calls (`quietMs` without one written), when there is one within
 * `drainMs`: on a machine of few cores the database's thread would otherwise take one from a burst's
 * answers (runs started together renew their tokens together, and their calls arrive together).
 * Whether a run may still record is known here (`track`, `settle`) rather than read under its row's
 * lock: this process is the only one that ends runs.
 */
export function journalFileDrain(db: Database, dir: string, options: DrainOptions) {
  const drainMs = options.drainMs ?? 200;
  const drainItems = options.drainItems ?? 64;
  const maxPending = options.maxPending ?? 50_000;
  const maxDeferMs = options.maxDeferMs ?? 10_000;
  const quietMs = options.quietMs ?? 5;
  const busyThreshold = 0.7;
  const log = options.log ?? (() => {});
  const file: JournalFile = openJournalFile(dir);
  /** Runs that may record, until when (epoch ms). */
  const open = new Map<string, number>();
  /** Written to the file, not yet committed to the database, in the order written. */
  let pending: StoreItem[] = [];
  /**
   * Tokens written to the file and not yet committed, by run and by the SHA-256 of their value: their
   * number and their JSON as it is now (its reference added when one is looked up, rarely: a stage
   * remembers the tokens it issued).
   */
  const unsettledTokens = new Map<string, Map<string, { number: number; token: string }>>();
  let timer: NodeJS.Timeout | undefined;
  let draining: Promise<void> | undefined;
  let failures = 0;
  let closed = false;

  /** The thread's use since the last look (0..1): a drain waits while requests keep it busy. */
  let lastLook = performance.eventLoopUtilization();
  let oldestPendingAt = 0;
  /** When the last call was written (performance.now()). */
  let lastWriteAt = 0;
  const quiet = () => performance.now() - lastWriteAt >= quietMs;
  const schedule = (delay = drainMs, waitingSince?: number) => {
    if (timer || draining || closed) return;
    timer = setTimeout(() => {
      timer = undefined;
      // Calls are being written (a burst): wait for a pause, `drainMs` at most.
      const since = waitingSince ?? performance.now();
      if (!quiet() && performance.now() - since < drainMs) {
        schedule(quietMs, since);
        return;
      }
      const look = performance.eventLoopUtilization();
      const busy = performance.eventLoopUtilization(look, lastLook).utilization;
      lastLook = look;
      // While requests keep this thread busy (a burst of calls), what is written waits in the file,
      // up to `maxDeferMs` and half of `maxPending`: the drain runs when the burst has passed.
      if (
        busy > busyThreshold &&
        Date.now() - oldestPendingAt < maxDeferMs &&
        pending.length < maxPending / 2
      ) {
        schedule();
        return;
      }
      void drain();
    }, delay);
  };

  /**
   * Commits what is written; on a failure, keeps it (file and memory) and tries again later. What is
   * written while it stores goes on in the same drain only when it fills a statement (or with `all`):
   * less waits for the next drain, `drainMs` later, so that statements stay full rather than following
   * the calls a few at a time (each costs the database's thread a statement, and a segment of the file).
   * A statement's worth goes on once calls pause (`quietMs`), not in the middle of a burst.
   */
  function drain(all = false): Promise<void> {
    if (draining) return draining;
    if (pending.length === 0) return Promise.resolve();
    let resume = false;
    const running = (async () => {
      try {
        while (pending.length > 0) {
          // By run (in order within each), so that a statement touches few runs' rows.
          const batch = pending.sort((a, b) => (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0));
          pending = [];
          const release = file.rotate();
          // After a failure, part of what goes again may be in already.
          const check = failures > 0;
          try {
            for (let index = 0; index < batch.length; index += drainItems) {
              await storeChunk(batch.slice(index, index + drainItems), check);
              // Requests read while the statement held the thread are served before the next one.
              if (index + drainItems < batch.length)
                await new Promise<void>((resolve) => setImmediate(resolve));
            }
          } catch (error) {
            // Nothing of the failed chunk's statement was kept; the chunks before it were, and go again:
            // a run's numbers already recorded are skipped (see storeChunk).
            pending = batch.concat(pending);
            throw error;
          }
          await release();
          failures = 0;
          if (!all && pending.length < drainItems) break;
          // A statement's worth written meanwhile goes on in this drain, once calls pause.
          if (!all && !quiet()) {
            resume = true;
            break;
          }
          if (pending.length > 0) await new Promise<void>((resolve) => setImmediate(resolve));
        }
      } catch (error) {
        failures += 1;
        log(
          `recording answered calls from the journal file failed (${failures} in a row), retrying: ${(error as Error).message}`,
        );
      }
    })().finally(() => {
      // (Asynchronous: `draining` is this drain until it has ended.)
      draining = undefined;
      if (pending.length > 0)
        schedule(resume ? quietMs : Math.min(5000, drainMs * 2 ** Math.min(failures, 8)));
    });
    draining = running;
    return running;
  }

  /**
   * One statement of journal entries; entries already in the database (a statement that committed
   * before a failure of the next) are left out, and a data error goes item by item.
   */
  async function storeChunk(items: StoreItem[], check: boolean): Promise<void> {
    const fresh = check ? await notStored(db, items) : items;
    if (fresh.length === 0) return;
    // Observed and traced as the grouped record statement is (batch "record"), the wait from the write.
    try {
      await observedStatement(
        'record',
        fresh.map((item) => ({ queuedAt: item.writtenAt, context: item.context })),
        () => storeEntries(db, fresh, false),
      );
    } catch (error) {
      if (fresh.length === 1 || !dataError(error)) {
        if (fresh.length === 1 && dataError(error)) {
          log(
            `run ${fresh[0]!.runId}: ${described(fresh[0]!)} cannot be stored and is left out: ${(error as Error).message}`,
          );
          settled(fresh);
          return;
        }
        throw error;
      }
      for (const item of fresh) await storeChunk([item], true);
      return;
    }
    settled(fresh);
  }

  /** Tokens committed (or left out): read from the database from now on. */
  function settled(items: readonly StoreItem[]): void {
    for (const item of items) {
      if (item.kind !== 'issued') continue;
      const run = unsettledTokens.get(item.runId);
      if (run?.get(item.sha256)?.number === item.number) run.delete(item.sha256);
      if (run?.size === 0) unsettledTokens.delete(item.runId);
    }
  }

  return {
    /** Writes a call, or a token issued or revoked, of a run that may record; false when it may not. */
    write(item: StoreItem): Promise<boolean> {
      const until = open.get(item.runId);
      if (closed || until === undefined || Date.now() >= until) return Promise.resolve(false);
      if (pending.length >= maxPending)
        return Promise.reject(
          new StorageUnavailableError(
            db.where,
            new Error(`${pending.length} answered calls wait for the database`),
          ),
        );
      item.writtenAt = performance.now();
      lastWriteAt = item.writtenAt;
      item.context = context.active();
      try {
        file.append([item]);
      } catch (error) {
        return Promise.reject(new StorageUnavailableError(db.where, error));
      }
      if (pending.length === 0 && !draining) oldestPendingAt = Date.now();
      pending.push(item);
      if (item.kind === 'issued') {
        const run = unsettledTokens.get(item.runId) ?? new Map<string, { number: number; token: string }>();
        unsettledTokens.set(item.runId, run);
        run.set(item.sha256, { number: item.number, token: item.token });
      } else if (item.kind === 'revoked') {
        for (const entry of unsettledTokens.get(item.runId)?.values() ?? [])
          if (entry.number === item.number) entry.token = item.token;
      }
      schedule();
      return Promise.resolve(true);
    },
    pendingToken(runId: string, sha256: string): string | undefined {
      const found = unsettledTokens.get(runId)?.get(sha256);
      return found && JSON.stringify({ ...(JSON.parse(found.token) as object), ref: `T${found.number}` });
    },
    track(runId: string, expiresAt: number) {
      open.set(runId, expiresAt);
    },
    async settle(runId: string) {
      open.delete(runId);
      await flush();
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await flush();
      await file.close(pending.length === 0);
    },
  };

  /** Every call written so far is committed (waits for a drain running, then drains the rest). */
  async function flush(): Promise<void> {
    for (let attempt = 0; pending.length > 0 || draining; attempt += 1) {
      if (draining) await draining;
      else await drain(true);
      if (pending.length > 0 && attempt >= 3)
        throw new StorageUnavailableError(db.where, new Error('answered calls could not be recorded'));
    }
  }
}
