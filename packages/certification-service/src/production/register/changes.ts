import type { Server } from 'node:http';
import type { Queryable } from '../../db/database.js';
import type { Register } from './register.js';

/**
 * The register's change notice (`GET /register/changes?after=<seq>`): a long poll a production gate
 * holds open, answered as soon as the whole register's `seq` is above `after` (what the register says
 * changed since the copy the gate holds), or after `holdMs` with `changed: false`. It carries no entry
 * and no secret: the gate still reads the signed register, which stays the fail-closed backstop.
 *
 * One poller per instance, running only while someone waits, wakes every waiter of the instance: each
 * `pollMs` it reads one cheap shared version of the decisions (their count and newest time, which only
 * grows as decisions commit, on any instance), and only when that moved (or a waiter arrived, or this
 * instance recorded a decision: `nudge`) does it read the register (`register.document()`, signed again
 * only when what it says changed) and answer every waiter whose `after` is below its `seq`. A new
 * waiter is answered by the next tick, whose reads start after it was added, so that a change between
 * the gate's read and its poll is never missed. A signed `seq` is global and strictly increasing, so a
 * copy re-signed after any change has a `seq` above every copy handed out before it.
 */

export interface ChangeLimits {
  /** Most waiters of one register reader key at once (429 beyond). Default 64. */
  perReader: number;
  /** Most waiters of this instance at once (503 beyond). Default 1024. */
  total: number;
}

export interface ChangeOptions {
  /** How long a poll is held before `changed: false`, in ms. Default 25 000. */
  holdMs?: number;
  /** How often the shared version is read while someone waits, in ms. Default 250. */
  pollMs?: number;
  limits?: Partial<ChangeLimits>;
}

export const defaultChangeOptions = {
  holdMs: 25_000,
  pollMs: 250,
  limits: { perReader: 64, total: 1024 },
} as const;

/** What a poll is answered with. */
export interface ChangeAnswer {
  changed: boolean;
  /** The seq of the whole register's current signed copy (the `after` of the next poll). */
  seq: number;
}

/** A poll refused because too many wait: 429 (this reader) or 503 (this instance), with Retry-After. */
export class ChangeRefusal extends Error {
  constructor(
    readonly status: 429 | 503,
    readonly retryAfterSeconds: number,
    message: string,
  ) {
    super(message);
  }
}

interface Waiter {
  readerId: string;
  after: number | undefined;
  /** The HTTP server the poll came through: once it stops listening (shutdown), the poll is answered. */
  server: Server | undefined;
  resolve(answer: ChangeAnswer): void;
}

/** The shared version: it moves whenever a decision commits, on any instance. */
async function decisionsVersion(db: Queryable): Promise<string> {
  const [row] = await db.query<{ n: string | number; at: string | Date | null }>(
    'SELECT count(*) AS n, max(created_at) AS at FROM decisions',
  );
  const at = row?.at instanceof Date ? row.at.toISOString() : String(row?.at ?? '');
  return `${String(row?.n ?? 0)}|${at}`;
}

export function createRegisterChanges(deps: {
  db: Queryable;
  register: Pick<Register, 'document'>;
  options?: ChangeOptions;
  log?: (line: string) => void;
}) {
  const holdMs = deps.options?.holdMs ?? defaultChangeOptions.holdMs;
  const pollMs = deps.options?.pollMs ?? defaultChangeOptions.pollMs;
  const limits = { ...defaultChangeOptions.limits, ...deps.options?.limits };
  const waiters = new Set<Waiter>();
  const perReader = new Map<string, number>();
  let lastVersion: string | undefined;
  /** Read the register at the next tick whatever the version says (a waiter arrived, a local decision). */
  let dirty = false;
  let ticking: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  let lastSeq = 0;
  let failing = false;

  const settle = (waiter: Waiter, answer: ChangeAnswer) => {
    if (!waiters.delete(waiter)) return;
    const count = (perReader.get(waiter.readerId) ?? 1) - 1;
    if (count === 0) perReader.delete(waiter.readerId);
    else perReader.set(waiter.readerId, count);
    waiter.resolve(answer);
  };

  async function tick(): Promise<void> {
    const force = dirty;
    dirty = false;
    try {
      const version = await decisionsVersion(deps.db);
      if (force || version !== lastVersion) {
        const copy = await deps.register.document();
        lastVersion = version;
        if (copy) lastSeq = copy.seq;
        for (const waiter of waiters)
          if (waiter.after === undefined || waiter.after < lastSeq)
            settle(waiter, { changed: true, seq: lastSeq });
      }
      if (failing) deps.log?.('register changes: the register can be read again');
      failing = false;
    } catch (error) {
      // Read again at the next tick; waiters keep waiting (at worst until their hold ends).
      dirty = dirty || force;
      if (!failing)
        deps.log?.(`register changes: the register could not be read (${(error as Error).message})`);
      failing = true;
    }
    // Polls whose server stopped listening (the instance shuts down) are answered now, not cut later.
    for (const waiter of waiters)
      if (waiter.server !== undefined && !waiter.server.listening)
        settle(waiter, { changed: false, seq: lastSeq });
  }

  /** Runs one tick now, or right after the running one; then every pollMs while anyone waits. */
  function schedule(delayMs: number) {
    if (closed || ticking || waiters.size === 0) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      ticking = tick().finally(() => {
        ticking = undefined;
        if (waiters.size === 0) lastVersion = undefined;
        else schedule(dirty ? 0 : pollMs);
      });
    }, delayMs);
  }

  return {
    holdMs,
    limits,
    /** Waiters held now. */
    get waiting() {
      return waiters.size;
    },
    /**
     * Waits until the register's seq is above `after` (at once when `after` is absent), or `holdMs`.
     * Throws ChangeRefusal when too many wait.
     */
    wait(
      readerId: string,
      after: number | undefined,
      context: { signal?: AbortSignal; server?: Server } = {},
    ): Promise<ChangeAnswer> {
      if (closed) throw new ChangeRefusal(503, 1, 'the service is shutting down');
      if (waiters.size >= limits.total)
        throw new ChangeRefusal(
          503,
          5,
          `${limits.total} change polls are held on this instance already; ask again later (the register's max-age pull covers the gap)`,
        );
      if ((perReader.get(readerId) ?? 0) >= limits.perReader)
        throw new ChangeRefusal(
          429,
          Math.ceil(holdMs / 1000),
          `this register reader key holds ${limits.perReader} change polls already; hold one per gate`,
        );
      return new Promise<ChangeAnswer>((resolve) => {
        const waiter: Waiter = { readerId, after, server: context.server, resolve };
        const done = (answer: ChangeAnswer) => {
          clearTimeout(hold);
          context.signal?.removeEventListener('abort', gone);
          resolve(answer);
        };
        waiter.resolve = done;
        const hold = setTimeout(() => settle(waiter, { changed: false, seq: lastSeq }), holdMs);
        const gone = () => settle(waiter, { changed: false, seq: lastSeq });
        context.signal?.addEventListener('abort', gone, { once: true });
        waiters.add(waiter);
        perReader.set(readerId, (perReader.get(readerId) ?? 0) + 1);
        dirty = true;
        if (ticking === undefined) schedule(0);
      });
    },
    /** This instance recorded a decision: read the register at once rather than at the next tick. */
    nudge() {
      dirty = true;
      if (ticking === undefined) schedule(0);
    },
    /** Answers every waiter (`changed: false`) and stops the poller. */
    async close() {
      closed = true;
      clearTimeout(timer);
      for (const waiter of waiters) settle(waiter, { changed: false, seq: lastSeq });
      await ticking;
    },
  };
}

export type RegisterChanges = ReturnType<typeof createRegisterChanges>;
