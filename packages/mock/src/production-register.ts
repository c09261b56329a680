import { createRemoteJWKSet } from 'jose';
import { readCapped } from './read-capped.js';
import { type ChangeWatcherStatus, RegisterChangeWatcher } from './register-changes.js';
import {
  describeFailure,
  maxAgeOf,
  type Register,
  RegisterFailure,
  type RegisterOptions,
  registerLimitBytes,
  resolveRegisterOptions,
  retryAfterFailureMs,
  verifyRegister,
} from './register-document.js';
import { digestOf, RegisterFloor } from './register-floor.js';

export type { Register, RegisterOptions } from './register-document.js';
export type { RegisterEntry } from './register-wire.js';

/**
 * The production register: the certification service's signed list of every partner's production
 * status. The production profile issues tokens only to partners it lists as `active`, with the
 * scopes it approves. Read with a register reader key, verified with the service's JWKS, taken only
 * when its `seq` is above the gate's replay floor (register-floor.ts), cached as its
 * `Cache-Control: max-age` and `ETag` say but never past its `exp`, and served from the last valid
 * copy while the service cannot be reached, until that copy's `exp` (then nothing is issued: fail
 * closed).
 */

/** What `RunningMock.registerStatus()` reports. */
export interface RegisterStatus {
  /** The register's address (`lookup: 'partner'`: `<register>/partners/{partnerId}`). */
  readonly url: string;
  readonly jwksUrl: string;
  /** `partner` when entries are read one partner at a time; absent for the whole register. */
  readonly lookup?: 'partner';
  /**
   * `fresh`: a verified copy within its max-age; `stale`: the last verified copy, kept while the
   * service cannot be read, until its `exp`; `none`: no usable copy (nothing is issued).
   */
  readonly state: 'fresh' | 'stale' | 'none';
  /** ISO time of the copy in use, its expiry, and when it was last confirmed (200 or 304). */
  readonly issuedAt?: string;
  readonly expiresAt?: string;
  readonly confirmedAt?: string;
  /** The seq of the copy in use (whole register only). */
  readonly seq?: number;
  /** Partners in the copy in use. */
  readonly partners?: number;
  /** How many verified copies were taken in (200 answers), and 304 answers. */
  readonly fetches: number;
  readonly notModified: number;
  /** The last failure to read or verify the register, if the last attempt failed. */
  readonly lastError?: string;
  /** The state file keeping the replay floor; absent: the floor lives in memory only. */
  readonly stateFile?: string;
  /** Why the state file could not be written, while it has not been written since. */
  readonly stateError?: string;
  /** The change notice held in the background (absent with `changes: false`). */
  readonly changes?: ChangeWatcherStatus;
}

const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

type Resolved = ReturnType<typeof resolveRegisterOptions>;
type Jwks = ReturnType<typeof createRemoteJWKSet>;

const jwksOf = (options: Resolved): Jwks =>
  createRemoteJWKSet(new URL(options.jwksUrl), {
    timeoutDuration: options.timeoutMs,
    cooldownDuration: 5000,
  });

/** The change notice of the register at `options.url` (`<url>/changes`), when `options.changes`. */
function watcherOf(
  options: Resolved,
  seq: () => number | undefined,
  onChange: () => Promise<void>,
): RegisterChangeWatcher | undefined {
  if (!options.changes) return undefined;
  return new RegisterChangeWatcher({
    url: `${options.url.replace(/\/+$/, '')}/changes`,
    key: options.key,
    seq,
    onChange,
  });
}

/**
 * Keeps the last verified register. `current()` gives the copy to decide with: read again first when
 * its max-age has passed or it holds no usable copy (one read at a time, shared by concurrent
 * callers), the last copy when the read fails, nothing once that copy's `exp` has passed.
 */
export class RegisterReader {
  readonly #options: Resolved;
  readonly #clock: () => number;
  readonly #jwks: Jwks;
  readonly #floor: RegisterFloor;
  #copy: Register | undefined;
  #etag: string | undefined;
  /** Epoch ms: never past the copy's exp, so that a long max-age cannot outlive the copy. */
  #freshUntil = 0;
  #confirmedAt = 0;
  #lastFailureAt = Number.NEGATIVE_INFINITY;
  #lastError: string | undefined;
  #fetches = 0;
  #notModified = 0;
  #reading: Promise<void> | undefined;
  /** Raised by `invalidate()`: a read that started before it cannot make its copy fresh. */
  #generation = 0;
  readonly #changes: RegisterChangeWatcher | undefined;

  /** Set for one partner's entry (`lookup: 'partner'`): a 404 then means "not in the register". */
  readonly #absentOn404: boolean;

  constructor(
    options: RegisterOptions,
    clock: () => number,
    shared?: { jwks: Jwks; absentOn404: boolean; floor: RegisterFloor },
  ) {
    this.#options = resolveRegisterOptions(options);
    this.#clock = clock;
    this.#jwks = shared?.jwks ?? jwksOf(this.#options);
    this.#floor = shared?.floor ?? new RegisterFloor(this.#options.stateFile);
    this.#absentOn404 = shared?.absentOn404 ?? false;
    // One notice for the whole register; a partner's entry is told by PartnerRegisterReader's.
    this.#changes =
      shared === undefined
        ? watcherOf(
            this.#options,
            () => this.#copy?.seq,
            () => this.invalidate(),
          )
        : undefined;
  }

  /**
   * The register changed (the service's notice): the copy held is no longer fresh, and, unless `lazy`,
   * it is read again now (after a read already under way, which may predate the change). The copy read
   * goes through every rule of a max-age read (signature, floor, skew, exp).
   */
  async invalidate(lazy = false): Promise<void> {
    this.#generation += 1;
    this.#freshUntil = 0;
    if (lazy) return;
    await this.#reading;
    await this.refresh();
  }

  /** Stops the change notice. */
  close(): Promise<void> {
    return this.#changes?.close() ?? Promise.resolve();
  }

  /** The copy to decide on `partnerId` with (the whole register), and why the last read failed. */
  async forPartner(_partnerId: string): Promise<{ register: Register | undefined; lastError?: string }> {
    const register = await this.current();
    return { register, ...(this.lastError === undefined ? {} : { lastError: this.lastError }) };
  }

  /** The service's address as the last register names it (its `iss`), else the register's origin. */
  get serviceUrl(): string {
    return this.#copy?.issuer ?? new URL(this.#options.url).origin;
  }

  /** Why the last read failed, if it did. */
  get lastError(): string | undefined {
    return this.#lastError;
  }

  /**
   * The copy to decide with, read again first when its max-age has passed or no usable copy is held
   * (after a failed read, not before a second has passed: a flood of requests costs one read a second).
   */
  async current(): Promise<Register | undefined> {
    const now = this.#clock();
    if (this.#usable(now) === undefined || now >= this.#freshUntil) {
      if (now - this.#lastFailureAt >= retryAfterFailureMs || this.#reading) await this.refresh();
    }
    return this.#usable(this.#clock());
  }

  #usable(now: number): Register | undefined {
    return this.#copy !== undefined && now < this.#copy.expiresAt * 1000 ? this.#copy : undefined;
  }

  /**
   * Reads the register now (one read at a time). Never throws: a failure is kept in `lastError`. The
   * first read ended also starts holding the change notice.
   */
  refresh(): Promise<void> {
    this.#reading ??= this.#read().finally(() => {
      this.#reading = undefined;
      // After the first read, so that the first poll already names the copy held.
      this.#changes?.start();
    });
    return this.#reading;
  }

  async #read(): Promise<void> {
    const generation = this.#generation;
    try {
      const headers: Record<string, string> = {
        authorization: `Bearer ${this.#options.key}`,
        accept: 'application/jwt',
      };
      // Revalidate only a copy still usable: a 304 cannot bring an expired copy back to life.
      if (this.#etag !== undefined && this.#usable(this.#clock()) !== undefined)
        headers['if-none-match'] = this.#etag;
      const response = await fetch(this.#options.url, {
        headers,
        // The reader key goes to the register's address only.
        redirect: 'error',
        signal: AbortSignal.timeout(this.#options.timeoutMs),
      });
      const now = this.#clock();
      if (response.status === 304 && headers['if-none-match'] !== undefined) {
        await response.body?.cancel();
        this.#notModified += 1;
        this.#confirmed(response, now, generation);
        return;
      }
      if (response.status === 404 && this.#absentOn404) return await this.#absent(response, now, generation);
      if (response.status !== 200) {
        await response.body?.cancel();
        throw new RegisterFailure(
          `the service answered ${response.status} to GET ${this.#options.url}${response.status === 401 || response.status === 403 ? ' (is the register reader key right?)' : ''}`,
        );
      }
      const body = await readCapped(response, registerLimitBytes);
      if (body === undefined) throw new RegisterFailure('the register is larger than 4 MiB');
      await this.#take(body.trim(), response, now, generation);
    } catch (error) {
      this.#lastFailureAt = this.#clock();
      this.#lastError = describeFailure(error);
    }
  }

  /** A verified copy above the floor replaces the one held; the floor is raised (and saved) first. */
  async #take(jws: string, response: Response, now: number, generation: number): Promise<void> {
    const register = await verifyRegister(jws, this.#jwks, now, this.#options.clockSkewSeconds);
    const digest = digestOf(jws);
    const refused = this.#floor.check(this.#options.url, register.seq, digest);
    if (refused !== undefined) throw new RegisterFailure(refused);
    await this.#floor.raise(this.#options.url, { seq: register.seq, digest, iat: register.issuedAt });
    this.#copy = register;
    this.#fetches += 1;
    this.#etag = response.headers.get('etag') ?? undefined;
    this.#confirmed(response, now, generation);
  }

  /**
   * The partner is not in the register: an empty copy, valid for the answer's max-age (at least a
   * second, so that a flood of one unknown partner's requests costs one read a second). It never
   * touches the replay floor.
   */
  async #absent(response: Response, now: number, generation: number): Promise<void> {
    await response.body?.cancel();
    const seconds = Math.max(1, maxAgeOf(response.headers.get('cache-control')));
    this.#copy = {
      issuer: this.#copy?.issuer ?? new URL(this.#options.url).origin,
      issuedAt: this.#copy?.issuedAt ?? 0,
      expiresAt: Math.floor(now / 1000) + seconds,
      seq: this.#copy?.seq ?? 0,
      partners: new Map(),
    };
    this.#etag = undefined;
    this.#fetches += 1;
    this.#confirmedAt = now;
    this.#freshUntil = generation === this.#generation ? now + seconds * 1000 : 0;
    this.#lastError = undefined;
  }

  #confirmed(response: Response, now: number, generation: number): void {
    this.#confirmedAt = now;
    const maxAgeMs = maxAgeOf(response.headers.get('cache-control')) * 1000;
    // A read that started before a change notice is not fresh: the next decision reads again.
    this.#freshUntil =
      generation === this.#generation ? Math.min(now + maxAgeMs, (this.#copy?.expiresAt ?? 0) * 1000) : 0;
    this.#lastError = undefined;
  }

  status(): RegisterStatus {
    const now = this.#clock();
    const copy = this.#usable(now);
    const { stateFile, writeError } = this.#floor;
    const base = {
      url: this.#options.url,
      jwksUrl: this.#options.jwksUrl,
      fetches: this.#fetches,
      notModified: this.#notModified,
      ...(this.#lastError === undefined ? {} : { lastError: this.#lastError }),
      ...(stateFile === undefined ? {} : { stateFile }),
      ...(writeError === undefined ? {} : { stateError: writeError }),
      ...(this.#changes === undefined ? {} : { changes: this.#changes.status() }),
    };
    if (copy === undefined) return { ...base, state: 'none' };
    return {
      ...base,
      state: now < this.#freshUntil && this.#lastError === undefined ? 'fresh' : 'stale',
      issuedAt: iso(copy.issuedAt),
      expiresAt: iso(copy.expiresAt),
      confirmedAt: new Date(this.#confirmedAt).toISOString(),
      seq: copy.seq,
      partners: copy.partners.size,
    };
  }
}

/** Most partners whose entries are kept at once (`lookup: 'partner'`); the oldest read goes first. */
const partnerEntriesLimit = 10_000;

/**
 * `lookup: 'partner'`: one RegisterReader per partner asking for a token, each reading
 * `GET <register>/partners/<partnerId>` with the same rules as the whole register (verified with the
 * service's JWKS, kept for its max-age, revalidated with its ETag, the last copy used until its exp
 * while the service cannot be read, nothing after). One JWKS cache is shared.
 */
export class PartnerRegisterReader {
  readonly #options: Resolved;
  readonly #clock: () => number;
  readonly #jwks: Jwks;
  readonly #floor: RegisterFloor;
  readonly #readers = new Map<string, RegisterReader>();
  readonly #changes: RegisterChangeWatcher | undefined;

  constructor(options: RegisterOptions, clock: () => number) {
    this.#options = resolveRegisterOptions(options);
    this.#clock = clock;
    this.#jwks = jwksOf(this.#options);
    this.#floor = new RegisterFloor(this.#options.stateFile);
    // A notice makes every entry held stale: each partner's next token request reads its entry first.
    this.#changes = watcherOf(
      this.#options,
      () => undefined,
      async () => {
        for (const reader of this.#readers.values()) await reader.invalidate(true);
      },
    );
  }

  /** Stops the change notice. */
  close(): Promise<void> {
    return this.#changes?.close() ?? Promise.resolve();
  }

  /** Where a partner's entry is read. */
  entryUrl(partnerId: string): string {
    return `${this.#options.url.replace(/\/+$/, '')}/partners/${encodeURIComponent(partnerId)}`;
  }

  async forPartner(partnerId: string): Promise<{ register: Register | undefined; lastError?: string }> {
    let reader = this.#readers.get(partnerId);
    if (reader === undefined) {
      if (this.#readers.size >= partnerEntriesLimit) {
        const oldest = this.#readers.keys().next().value;
        if (oldest !== undefined) this.#readers.delete(oldest);
      }
      reader = new RegisterReader({ ...this.#options, url: this.entryUrl(partnerId) }, this.#clock, {
        jwks: this.#jwks,
        absentOn404: true,
        floor: this.#floor,
      });
      this.#readers.set(partnerId, reader);
    }
    return reader.forPartner(partnerId);
  }

  /** Nothing is read before a token request asks for a partner; the change notice starts. */
  refresh(): Promise<void> {
    this.#changes?.start();
    return Promise.resolve();
  }

  status(): RegisterStatus {
    const statuses = [...this.#readers.values()].map((reader) => reader.status());
    const failed = statuses.find((status) => status.lastError !== undefined);
    const usable = statuses.filter((status) => status.state !== 'none');
    return {
      url: this.entryUrl('{partnerId}').replace('%7BpartnerId%7D', '{partnerId}'),
      jwksUrl: this.#options.jwksUrl,
      lookup: 'partner',
      state: usable.length === 0 ? 'none' : usable.every((s) => s.state === 'fresh') ? 'fresh' : 'stale',
      partners: usable.length,
      fetches: statuses.reduce((sum, s) => sum + s.fetches, 0),
      notModified: statuses.reduce((sum, s) => sum + s.notModified, 0),
      ...(failed?.lastError === undefined ? {} : { lastError: failed.lastError }),
      ...(this.#floor.stateFile === undefined ? {} : { stateFile: this.#floor.stateFile }),
      ...(this.#floor.writeError === undefined ? {} : { stateError: this.#floor.writeError }),
      ...(this.#changes === undefined ? {} : { changes: this.#changes.status() }),
    };
  }
}

/** The reader `lookup` asks for. */
export function registerReader(
  options: RegisterOptions,
  clock: () => number,
): RegisterReader | PartnerRegisterReader {
  return options.lookup === 'partner'
    ? new PartnerRegisterReader(options, clock)
    : new RegisterReader(options, clock);
}
