import { performance } from 'node:perf_hooks';
import { type Context, context } from '@opentelemetry/api';
import { batched, observedStatement } from '../db/batched.js';
import type { Database, Queryable } from '../db/database.js';
import { StorageUnavailableError } from '../errors.js';
import {
  type ExchangeEntry,
  type IssuedEntry,
  openSpool,
  type RevokedEntry,
  readSpool,
  type Spool,
  type SpoolEntry,
} from './spool.js';

/**
 * The statements every call of every run makes, shared by the runs an instance serves: numbering the
 * call and recording it. Each is grouped (see `batched`): under load, one statement numbers or records
 * the calls of many runs at once; a call alone goes out at once.
 *
 * Numbering is the database's when instances share it (PostgreSQL: a call may reach any of them). The
 * embedded store belongs to one process (its directory is locked), so there this instance numbers in
 * memory, from the highest number recorded, and a call costs one statement, not two.
 */
export interface RunJournal {
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
   * With a journal file (`spoolDir`): the run's calls may be recorded until `expiresAt` (epoch ms), or
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

export interface JournalOptions {
  /**
   * The embedded store's journal file directory (see spool.ts): a call is answered once its exchange is
   * written there, and the database is filled from it in the background. Only for a database one process
   * owns; without it each call waits for its statement.
   */
  spoolDir?: string;
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

/** Items per statement, and bytes of exchanges per statement (an exchange is at most a few hundred KiB). */
const maxItems = 256;
const maxBytes = 4 * 1024 * 1024;
/**
 * A statement refused for its data (SQLSTATE class 22, data exception, or 23, integrity constraint):
 * it may be one item's, so each goes again alone; one partner's call never fails another's.
 */
const dataError = (error: unknown) => /^2[23]/.test(String((error as { code?: unknown }).code ?? ''));

export function runJournal(db: Database, options: JournalOptions = {}): RunJournal {
  const exclusive = db.exclusive;
  const spooled =
    options.spoolDir !== undefined && exclusive ? spooledRecords(db, options.spoolDir, options) : undefined;
  /** Where this instance numbers: the last number given, by run. */
  const numbered = new Map<string, number>();
  /** With a journal file: the last token number given, by run. */
  const tokenNumbers = new Map<string, number>();
  const shared = batched<string, number | undefined>(
    async (ids) => {
      const wanted = new Map<string, number>();
      for (const id of ids) wanted.set(id, (wanted.get(id) ?? 0) + 1);
      // Rows are locked in id order, so that two instances numbering the same runs never deadlock. The
      // commit does not wait for the disk: a number matters once its call is recorded, and recording
      // (which waits) flushes it too, or keeps the run's number past it (`greatest` below).
      const rows = await db.queryUnflushed<{ id: string; seq: number }>(
        `WITH locked AS (SELECT id FROM runs WHERE id = ANY($1) AND status = 'open' AND expires_at > now() ORDER BY id FOR UPDATE)
         UPDATE runs r SET seq = r.seq + ($2::int[])[array_position($1::text[], r.id)], last_activity_at = now()
         FROM locked WHERE r.id = locked.id
         RETURNING r.id, r.seq`,
        [[...wanted.keys()], [...wanted.values()]],
      );
      // The last number each run got; its callers take the numbers before it, in arrival order.
      const next = new Map(rows.map((row) => [row.id, row.seq - wanted.get(row.id)! + 1]));
      return ids.map((id) => {
        const seq = next.get(id);
        if (seq !== undefined) next.set(id, seq + 1);
        return seq;
      });
    },
    { maxItems, alone: dataError, name: 'number' },
  );

  const record = batched<ExchangeEntry, boolean>(
    async (items) => {
      const open = await storeExchanges(db, items, true);
      return items.map((item) => open.has(item.runId));
    },
    {
      maxItems,
      maxWeight: maxBytes,
      weigh: (item) => item.exchange.length,
      alone: dataError,
      name: 'record',
    },
  );

  const issue = batched<{ runId: string; sha256: string; token: string }, number | undefined>(
    async (items) => {
      const { counts, ranks } = rankByRun(items);
      // One statement: each open run's token count moves on by its tokens in the batch, and each token
      // is stored by hash with its number and reference (`T1`, `T2`, …), listed in the session while the
      // run keeps exchanges.
      // Runs are locked in id order, as `record` does, so that the two never deadlock.
      const rows = await db.query<{ id: string; base: number }>(
        `WITH open AS (
             SELECT id FROM runs WHERE id = ANY($1) AND status = 'open' AND expires_at > now() ORDER BY id FOR UPDATE),
           counted AS (
             UPDATE runs r SET token_count = r.token_count + w.n
             FROM open o JOIN unnest($1::text[], $2::int[]) AS w(id, n) ON w.id = o.id
             WHERE r.id = o.id
             RETURNING r.id, r.token_count - w.n AS base, r.recorded < r.max_exchanges AS listed),
           kept AS (
             INSERT INTO run_tokens (run_id, value_sha256, number, listed, token)
             SELECT i.run_id, i.sha, c.base + i.rank, c.listed,
               i.token || jsonb_build_object('ref', 'T' || (c.base + i.rank))
             FROM unnest($3::text[], $4::text[], $5::int[], $6::jsonb[]) AS i(run_id, sha, rank, token)
             JOIN counted c ON c.id = i.run_id)
         SELECT id, base FROM counted`,
        [
          [...counts.keys()],
          [...counts.values()],
          items.map((item) => item.runId),
          items.map((item) => item.sha256),
          ranks,
          items.map((item) => item.token),
        ],
      );
      const bases = new Map(rows.map((row) => [row.id, Number(row.base)]));
      return items.map((item, index) => {
        const base = bases.get(item.runId);
        return base === undefined ? undefined : base + ranks[index]!;
      });
    },
    { maxItems, alone: dataError, name: 'issue' },
  );

  const revoke = batched<{ runId: string; number: number; token: string }, void>(
    async (items) => {
      await db.query(
        `UPDATE run_tokens t SET token = w.token
         FROM unnest($1::text[], $2::int[], $3::jsonb[]) AS w(run_id, number, token), runs r
         WHERE t.run_id = w.run_id AND t.number = w.number AND r.id = w.run_id AND r.status = 'open'`,
        [items.map((item) => item.runId), items.map((item) => item.number), items.map((item) => item.token)],
      );
      return items.map(() => undefined);
    },
    { maxItems, alone: dataError, name: 'revoke' },
  );

  const play = batched<
    { runId: string; before: string; after: string; number: number | null; token: string | null },
    boolean
  >(
    async (all) => {
      // One item per run: each instance plays a run's calls one at a time, so a second is not expected;
      // one would find the row changed by the first (false: it is played again). Rows are locked in
      // id order, as the other batches lock them, so that they never deadlock; a row another statement
      // changed while this one waited is compared again as it is now (PostgreSQL rechecks a locked
      // row's conditions on its latest version).
      const firsts = new Set<string>();
      const items = all.filter((item) => !firsts.has(item.runId) && firsts.add(item.runId));
      const rows = await db.queryUnflushed<{ id: string }>(
        `WITH w AS (
             SELECT * FROM unnest($1::text[], $2::jsonb[], $3::jsonb[], $4::int[], $5::jsonb[])
               AS w(id, before, after, number, token)),
           locked AS (
             SELECT r.id FROM runs r JOIN w ON w.id = r.id
             WHERE r.status = 'open' AND r.expires_at > now() AND r.scenario_state = w.before
             ORDER BY r.id FOR UPDATE OF r),
           changed AS (
             UPDATE runs r SET scenario_state = w.after
             FROM locked l JOIN w ON w.id = l.id
             WHERE r.id = l.id AND r.scenario_state = w.before
             RETURNING r.id),
           revoked AS (
             UPDATE run_tokens t SET token = w.token
             FROM changed c JOIN w ON w.id = c.id
             WHERE w.number IS NOT NULL AND t.run_id = w.id AND t.number = w.number)
         SELECT id FROM changed`,
        [
          items.map((item) => item.runId),
          items.map((item) => item.before),
          items.map((item) => item.after),
          items.map((item) => item.number),
          items.map((item) => item.token),
        ],
      );
      const written = new Set(rows.map((row) => row.id));
      return all.map((item) => items.includes(item) && written.has(item.runId));
    },
    { maxItems, alone: dataError, name: 'play' },
  );

  return {
    exclusive,
    async nextSeq(runId, recorded) {
      if (!exclusive) return shared(runId);
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
        ? Promise.reject(new Error(`run ${runId}: exchange ${seq} is not JSON on one line`))
        : spooled
          ? spooled.write({ runId, seq, exchange, scenarioState })
          : record({ runId, seq, exchange, scenarioState }),
    async issue(runId, sha256, token, recorded) {
      if (!spooled) return issue({ runId, sha256, token });
      const number = Math.max(tokenNumbers.get(runId) ?? 0, recorded) + 1;
      if (!(await spooled.write({ kind: 'issued', runId, number, sha256, token }))) return undefined;
      tokenNumbers.set(runId, number);
      return number;
    },
    revoke: async (runId, number, token) => {
      if (!spooled) return revoke({ runId, number, token });
      // Not open any more: judging has what it needs (nothing is answered after).
      await spooled.write({ kind: 'revoked', runId, number, token });
    },
    pendingToken: (runId, sha256) => spooled?.pendingToken(runId, sha256),
    play: (runId, { before, after, revoked }) =>
      play({ runId, before, after, number: revoked?.number ?? null, token: revoked?.token ?? null }),
    forget: (runId) => {
      numbered.delete(runId);
      tokenNumbers.delete(runId);
    },
    track: (runId, expiresAt) => spooled?.track(runId, expiresAt),
    settle: async (runId) => spooled?.settle(runId),
    close: async () => spooled?.close(),
  };
}

/**
 * Recording through the journal file (see spool.ts), where one process owns the database: a call is
 * written to the file (write(2), a few microseconds) and answered, and the calls written meanwhile go
 * to the database together `drainMs` later, off every answer's path, in statements of `drainItems`
 * with a turn of the event loop between them (an embedded database's statement holds this thread).
 * A drain starts in a pause between calls (`quietMs` without one written), when there is one within
 * `drainMs`: on a machine of few cores the database's thread would otherwise take one from a burst's
 * answers (runs started together renew their tokens together, and their calls arrive together).
 * Whether a run may still record is known here (`track`, `settle`) rather than read under its row's
 * lock: this process is the only one that ends runs.
 */
function spooledRecords(db: Database, dir: string, options: JournalOptions) {
  const drainMs = options.drainMs ?? 200;
  const drainItems = options.drainItems ?? 64;
  const maxPending = options.maxPending ?? 50_000;
  const maxDeferMs = options.maxDeferMs ?? 10_000;
  const quietMs = options.quietMs ?? 5;
  const busyThreshold = 0.7;
  const log = options.log ?? (() => {});
  const spool: Spool = openSpool(dir);
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
          const release = spool.rotate();
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
        spool.append([item]);
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
      await spool.close(pending.length === 0);
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

/**
 * The items not in the database yet: calls whose run and number are not there (a token issued is
 * stored once whatever, and a revocation written again changes nothing).
 */
async function notStored(db: Queryable, items: readonly StoreItem[]): Promise<StoreItem[]> {
  const calls = items.filter(isExchange);
  if (calls.length === 0) return [...items];
  const rows = await db.query<{ run_id: string; seq: number }>(
    `SELECT e.run_id, e.seq FROM exchanges e
     JOIN unnest($1::text[], $2::int[]) AS i(run_id, seq) ON e.run_id = i.run_id AND e.seq = i.seq`,
    [calls.map((item) => item.runId), calls.map((item) => item.seq)],
  );
  if (rows.length === 0) return [...items];
  const stored = new Set(rows.map((row) => `${row.run_id}\t${row.seq}`));
  return items.filter((item) => !isExchange(item) || !stored.has(`${item.runId}\t${item.seq}`));
}

const isExchange = (item: SpoolEntry): item is ExchangeEntry => item.kind === undefined;

/** What an entry is, for a log line: a call, a token issued or a revocation. */
const described = (item: SpoolEntry) =>
  item.kind === 'issued'
    ? `token T${item.number}`
    : item.kind === 'revoked'
      ? `the revocation of token T${item.number}`
      : `call ${item.seq}`;

/**
 * Fills the database from the journal files a previous process left (killed before it committed what
 * it had answered): run before this process serves a call. Resolves with the calls recovered.
 */
export async function replayJournal(
  db: Database,
  dir: string,
  log: (line: string) => void = () => {},
): Promise<number> {
  const { entries, remove } = readSpool(dir);
  let recovered = 0;
  const leftOut = (item: StoreItem, why: string) =>
    log(
      `run ${item.runId}: ${described(item)} from the journal file cannot be stored and is left out: ${why}`,
    );
  /** Stores `items`; counts the calls a run took, says what none did (its run is not in the database). */
  const store = async (items: StoreItem[]) => {
    const took = await storeEntries(db, items, false);
    for (const item of items)
      if (!took.has(item.runId)) leftOut(item, 'its run is not in the database');
      else if (isExchange(item)) recovered += 1;
  };
  for (let index = 0; index < entries.length; index += 64) {
    const fresh = await notStored(db, entries.slice(index, index + 64));
    if (fresh.length === 0) continue;
    try {
      await store(fresh);
    } catch (error) {
      if (!dataError(error)) throw error;
      // One entry's data: each goes alone, and what cannot be stored is left out, said, rather than
      // keeping the service from starting.
      for (const item of fresh)
        try {
          await store([item]);
        } catch (alone) {
          if (!dataError(alone)) throw alone;
          leftOut(item, (alone as Error).message);
        }
    }
  }
  remove();
  if (recovered > 0) log(`recovered ${recovered} answered call(s) from the journal file in ${dir}`);
  return recovered;
}

/**
 * A call to record; `writtenAt` (performance.now()) when it went to the journal file, and the trace
 * context it was written in.
 */
type StoreItem = SpoolEntry & { writtenAt?: number; context?: Context };

/**
 * Stores journal entries: the calls and the tokens issued in one statement (see `storeExchanges`), each
 * token listed in the session if its run had not reached its cap of calls when it was issued; the
 * revocations, when there are any, after it in the same transaction (a revocation may be of a token
 * the statement stores, which a later part of the same statement could not see). Answers the ids of
 * the runs in the database.
 */
async function storeEntries(
  db: Database,
  items: readonly StoreItem[],
  openOnly: boolean,
): Promise<Set<string>> {
  const calls = items.filter(isExchange);
  const issued: IssuedBefore[] = [];
  const revoked: RevokedEntry[] = [];
  // The calls of each run written before each token (in this batch: the run's row counts the others).
  const callsBefore = new Map<string, number>();
  for (const item of items)
    if (isExchange(item)) callsBefore.set(item.runId, (callsBefore.get(item.runId) ?? 0) + 1);
    else if (item.kind === 'issued') issued.push({ ...item, before: callsBefore.get(item.runId) ?? 0 });
    else revoked.push(item);
  if (revoked.length === 0) return storeExchanges(db, calls, openOnly, issued);
  return db.transaction(async (tx) => {
    const runs = await storeExchanges(tx, calls, openOnly, issued);
    const rows = await tx.query<{ run_id: string }>(
      `UPDATE run_tokens t SET token = w.token
       FROM unnest($1::text[], $2::int[], $3::jsonb[]) AS w(run_id, number, token)
       WHERE t.run_id = w.run_id AND t.number = w.number
       RETURNING t.run_id`,
      [
        revoked.map((item) => item.runId),
        revoked.map((item) => item.number),
        revoked.map((item) => item.token),
      ],
    );
    for (const row of rows) runs.add(row.run_id);
    return runs;
  });
}

/** A token issued, with the calls of its run written before it in the same batch. */
type IssuedBefore = IssuedEntry & { before: number };

/**
 * Records exchanges, and the tokens `issued` with them, in one statement; answers the ids of the runs
 * in the database. Tokens are listed by the run's row as it was before the statement (its calls in this
 * batch counted by `before`), as if stored first.
 */
async function storeExchanges(
  db: Queryable,
  items: readonly ExchangeEntry[],
  openOnly: boolean,
  issued: readonly IssuedBefore[] = [],
): Promise<Set<string>> {
  const { counts, ranks } = rankByRun(items);
  // The highest number of each run's items (the run's `seq` never falls behind what it recorded).
  const highest = new Map<string, number>();
  for (const item of items) highest.set(item.runId, Math.max(highest.get(item.runId) ?? 0, item.seq));
  // The latest scenario state given for each run (states only move on: the last is the newest).
  const states = new Map<string, string>();
  for (const item of items) if (item.scenarioState !== undefined) states.set(item.runId, item.scenarioState);
  // The highest token number of each run's tokens (the run's token count never falls behind it).
  const tokens = new Map<string, number>();
  for (const item of issued) tokens.set(item.runId, Math.max(tokens.get(item.runId) ?? 0, item.number));
  const ids = [...new Set([...counts.keys(), ...tokens.keys()])];
  // One statement: lock the runs (in id order), keep each run's exchanges up to its cap, count the
  // rest as dropped, store the tokens. With `openOnly`, a run that is not open, or past its deadline
  // (the service may have been down when it passed), records nothing, and is not in the answer.
  const rows = await db.query<{ id: string }>(
    `WITH open AS (
           SELECT id, recorded, max_exchanges FROM runs WHERE id = ANY($1) ${openOnly ? "AND status = 'open' AND expires_at > now()" : ''}
           ORDER BY id FOR UPDATE),
         counted AS (
           UPDATE runs r SET recorded = o.recorded + least(w.n, greatest(0, o.max_exchanges - o.recorded)),
             dropped = r.dropped + w.n - least(w.n, greatest(0, o.max_exchanges - o.recorded)),
             seq = greatest(r.seq, w.highest),
             last_activity_at = CASE WHEN w.n > 0 THEN now() ELSE r.last_activity_at END,
             scenario_state = coalesce(w.state, r.scenario_state),
             token_count = greatest(r.token_count, w.tokens)
           FROM open o JOIN unnest($1::text[], $2::int[], $7::int[], $8::jsonb[], $9::int[]) AS w(id, n, highest, state, tokens) ON w.id = o.id
           WHERE r.id = o.id),
         kept AS (
           INSERT INTO exchanges (run_id, seq, exchange)
           SELECT i.run_id, i.seq, i.exchange
           FROM unnest($3::text[], $4::int[], $5::int[], string_to_array($6::text, chr(10))::jsonb[]) AS i(run_id, seq, rank, exchange)
           JOIN open o ON o.id = i.run_id
           WHERE o.recorded + i.rank <= o.max_exchanges)${
             issued.length === 0
               ? ''
               : `,
         stored AS (
           INSERT INTO run_tokens (run_id, value_sha256, number, listed, token)
           SELECT t.run_id, t.sha, t.number, o.recorded + t.before < o.max_exchanges,
             t.token || jsonb_build_object('ref', 'T' || t.number)
           FROM unnest($10::text[], $11::text[], $12::int[], $13::jsonb[], $14::int[]) AS t(run_id, sha, number, token, before)
           JOIN open o ON o.id = t.run_id
           ON CONFLICT (run_id, value_sha256) DO NOTHING)`
           }
       SELECT id FROM open`,
    [
      ids,
      ids.map((id) => counts.get(id) ?? 0),
      items.map((item) => item.runId),
      items.map((item) => item.seq),
      ranks,
      exchangesText(items),
      ids.map((id) => highest.get(id) ?? null),
      ids.map((id) => states.get(id) ?? null),
      ids.map((id) => tokens.get(id) ?? null),
      ...(issued.length === 0
        ? []
        : [
            issued.map((item) => item.runId),
            issued.map((item) => item.sha256),
            issued.map((item) => item.number),
            issued.map((item) => item.token),
            issued.map((item) => item.before),
          ]),
    ],
  );
  return new Set(rows.map((row) => row.id));
}

/**
 * The exchanges of a statement as one text, a line each, which PostgreSQL splits (`string_to_array`):
 * it costs the embedded database's thread less than an array parameter, whose every element is quoted
 * and escaped on the way in, then unquoted. An exchange never holds a line break (`record` refuses one;
 * the journal file's lines are split at them).
 */
const exchangesText = (items: readonly ExchangeEntry[]): string =>
  items.map((item) => item.exchange).join('\n');

/**
 * Each item's rank among its run's items in a batch (1, 2, … in arrival order), and each run's count of
 * items (in the order runs first appear).
 */
function rankByRun(items: readonly { runId: string }[]): { counts: Map<string, number>; ranks: number[] } {
  const counts = new Map<string, number>();
  const ranks = items.map((item) => {
    const rank = (counts.get(item.runId) ?? 0) + 1;
    counts.set(item.runId, rank);
    return rank;
  });
  return { counts, ranks };
}
