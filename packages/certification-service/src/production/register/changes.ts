import type { Server } from 'node:http';
import type { Queryable } from '../../db/database.js';
import { ServiceError } from '../../errors.js';
import type { LogLine } from '../../observability/logger.js';
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
export class ChangeRefusal extends ServiceError {
  constructor(
    readonly status: 429 | 503,
    readonly retryAfterSeconds: number,
    message: string,
  ) {
    super('ERR_REGISTER_POLL_REFUSED', message);
    this.name = 'ChangeRefusal';
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

interface ChangeDeps {
  db: Queryable;
  register: Pick<Register, 'document'>;
  options?: ChangeOptions;
  log?: LogLine;
}

/** The notice of one instance: its waiters, and the poller that runs while any waits. */
export class RegisterChanges {
  readonly holdMs: number;
  readonly pollMs: number;
  readonly limits: ChangeLimits;
  readonly #deps: ChangeDeps;
  readonly #waiters = new Set<Waiter>();
  readonly #perReader = new Map<string, number>();
  #lastVersion: string | undefined;
  /** Read the register at the next tick whatever the version says (a waiter arrived, a local decision). */
  #dirty = false;
  #ticking: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  #lastSeq = 0;
  #failing = false;

  constructor(deps: ChangeDeps) {
    this.#deps = deps;
    this.holdMs = deps.options?.holdMs ?? defaultChangeOptions.holdMs;
    this.pollMs = deps.options?.pollMs ?? defaultChangeOptions.pollMs;
    this.limits = { ...defaultChangeOptions.limits, ...deps.options?.limits };
  }

  /** Waiters held now. */
  get waiting(): number {
    return this.#waiters.size;
  }

  /**
   * Waits until the register's seq is above `after` (at once when `after` is absent), or `holdMs`.
   * Throws ChangeRefusal when too many wait.
   */
  wait(
    readerId: string,
    after: number | undefined,
    context: { signal?: AbortSignal; server?: Server } = {},
  ): Promise<ChangeAnswer> {
    this.#admit(readerId);
    return new Promise<ChangeAnswer>((resolve) => {
      const waiter: Waiter = { readerId, after, server: context.server, resolve };
      const unchanged = () => this.#settle(waiter, { changed: false, seq: this.#lastSeq });
      const hold = setTimeout(unchanged, this.holdMs);
      context.signal?.addEventListener('abort', unchanged, { once: true });
      waiter.resolve = (answer) => {
        clearTimeout(hold);
        context.signal?.removeEventListener('abort', unchanged);
        resolve(answer);
      };
      this.#waiters.add(waiter);
      this.#perReader.set(readerId, (this.#perReader.get(readerId) ?? 0) + 1);
      this.nudge();
    });
  }

  /** This instance recorded a decision (or a waiter arrived): read the register at once. */
  nudge(): void {
    this.#dirty = true;
    if (this.#ticking === undefined) this.#schedule(0);
  }

  /** Answers every waiter (`changed: false`) and stops the poller. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    for (const waiter of this.#waiters) this.#settle(waiter, { changed: false, seq: this.#lastSeq });
    await this.#ticking;
  }

  #admit(readerId: string): void {
    if (this.#closed) throw new ChangeRefusal(503, 1, 'the service is shutting down');
    if (this.#waiters.size >= this.limits.total)
      throw new ChangeRefusal(
        503,
        5,
        `${this.limits.total} change polls are held on this instance already; ask again later (the register's max-age pull covers the gap)`,
      );
    if ((this.#perReader.get(readerId) ?? 0) >= this.limits.perReader)
      throw new ChangeRefusal(
        429,
        Math.ceil(this.holdMs / 1000),
        `this register reader key holds ${this.limits.perReader} change polls already; hold one per gate`,
      );
  }

  #settle(waiter: Waiter, answer: ChangeAnswer): void {
    if (!this.#waiters.delete(waiter)) return;
    const count = (this.#perReader.get(waiter.readerId) ?? 1) - 1;
    if (count === 0) this.#perReader.delete(waiter.readerId);
    else this.#perReader.set(waiter.readerId, count);
    waiter.resolve(answer);
  }

  /** Runs one tick after `delayMs` (none while one runs); then every pollMs while anyone waits. */
  #schedule(delayMs: number): void {
    if (this.#closed || this.#ticking || this.#waiters.size === 0) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#ticking = this.#tick().finally(() => {
        this.#ticking = undefined;
        if (this.#waiters.size === 0) this.#lastVersion = undefined;
        else this.#schedule(this.#dirty ? 0 : this.pollMs);
      });
    }, delayMs);
  }

  async #tick(): Promise<void> {
    const force = this.#dirty;
    this.#dirty = false;
    try {
      const version = await decisionsVersion(this.#deps.db);
      if (force || version !== this.#lastVersion) {
        const copy = await this.#deps.register.document();
        this.#lastVersion = version;
        if (copy) this.#lastSeq = copy.seq;
        for (const waiter of this.#waiters)
          if (waiter.after === undefined || waiter.after < this.#lastSeq)
            this.#settle(waiter, { changed: true, seq: this.#lastSeq });
      }
      if (this.#failing) this.#deps.log?.('register changes: the register can be read again');
      this.#failing = false;
    } catch (error) {
      // Read again at the next tick; waiters keep waiting (at worst until their hold ends).
      this.#dirty ||= force;
      if (!this.#failing)
        this.#deps.log?.(`register changes: the register could not be read (${(error as Error).message})`);
      this.#failing = true;
    }
    // Polls whose server stopped listening (the instance shuts down) are answered now, not cut later.
    for (const waiter of this.#waiters)
      if (waiter.server !== undefined && !waiter.server.listening)
        this.#settle(waiter, { changed: false, seq: this.#lastSeq });
  }
}

export function createRegisterChanges(deps: ChangeDeps): RegisterChanges {
  return new RegisterChanges(deps);
}
