import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { MockError } from './errors.js';

/**
 * The production gate's replay floor: for each register document it reads (the whole register, or
 * one partner's entry), the highest `seq` it has accepted and the digest of that document. A document
 * is taken only when its `seq` is strictly higher, or when it is the very same document again (same
 * `seq`, byte-for-byte the same JWS: a re-delivery, which can roll nothing back). Kept in memory, and
 * in a small state file when one is given (`register.stateFile`, `--register-state FILE`), so that a
 * restarted gate keeps its floor.
 */

/** What the floor remembers of one accepted document. */
export interface FloorMark {
  readonly seq: number;
  /** SHA-256 of the compact JWS, base64url. */
  readonly digest: string;
  /** The document's iat (epoch seconds), for people reading the file. */
  readonly iat: number;
}

const format = 'partner-mock-register-state/v1';
/** Most documents whose floor is kept: the whole register and 10 000 partner entries. */
export const floorLimit = 10_001;
/** Largest state file read: 8 MiB. */
const stateFileLimit = 8 * 1024 * 1024;

export const digestOf = (jws: string) => createHash('sha256').update(jws).digest('base64url');

function stateError(file: string, problem: string): never {
  throw new MockError(
    'ERR_MOCK_REGISTER_STATE',
    `startMock: the register state file ${file} ${problem}. It holds the highest register seq this gate has accepted; restore it from a backup, or delete it to start without a floor (the gate then takes any valid register once, as at its first start).`,
  );
}

function isMark(value: unknown): value is FloorMark {
  if (typeof value !== 'object' || value === null) return false;
  const { seq, digest, iat } = value as Record<string, unknown>;
  return (
    Number.isSafeInteger(seq) &&
    (seq as number) >= 0 &&
    typeof digest === 'string' &&
    /^[A-Za-z0-9_-]{43}$/.test(digest) &&
    typeof iat === 'number' &&
    Number.isFinite(iat)
  );
}

/** Reads a state file at start: its floors, none when it does not exist yet. Throws naming the file. */
export function readStateFile(file: string): Map<string, FloorMark> {
  let text: string;
  try {
    const stats = statSync(file);
    if (!stats.isFile()) stateError(file, 'is not a regular file');
    if (stats.size > stateFileLimit) stateError(file, 'is larger than 8 MiB');
    text = readFileSync(file, 'utf8');
  } catch (cause) {
    if (cause instanceof MockError) throw cause;
    const code = (cause as NodeJS.ErrnoException).code ?? 'error';
    if (code !== 'ENOENT') stateError(file, `cannot be read (${code})`);
    const dir = dirname(file);
    let isDir = false;
    try {
      isDir = statSync(dir).isDirectory();
    } catch {
      isDir = false;
    }
    if (!isDir) stateError(file, `cannot be created: its directory ${dir} does not exist`);
    return new Map();
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    stateError(file, 'is not valid JSON (damaged?)');
  }
  const floors = (parsed as { floors?: unknown } | null)?.floors;
  if ((parsed as { format?: unknown } | null)?.format !== format || typeof floors !== 'object' || !floors)
    stateError(file, `is not a register state (no "format": "${format}" with "floors")`);
  const map = new Map<string, FloorMark>();
  for (const [url, mark] of Object.entries(floors as Record<string, unknown>)) {
    if (!isMark(mark)) stateError(file, `has a damaged floor for ${url.slice(0, 200)}`);
    map.set(url, { seq: mark.seq, digest: mark.digest, iat: mark.iat });
  }
  return map;
}

/** Writes the file atomically: a temporary file beside it, flushed to disk, renamed over it. */
async function writeStateFile(file: string, floors: ReadonlyMap<string, FloorMark>): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  const body = `${JSON.stringify({ format, floors: Object.fromEntries(floors) }, null, 1)}\n`;
  try {
    const handle = await open(temporary, 'w', 0o600);
    try {
      await handle.writeFile(body);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true }).catch(() => undefined);
    throw error;
  }
  // The rename itself is made durable by flushing the directory (where the platform allows it).
  const directory = await open(dirname(file), 'r').catch(() => undefined);
  await directory
    ?.sync()
    .catch(() => undefined)
    .finally(() => directory.close());
}

/** Why a document is refused by the floor, or undefined when it may be taken. */
export type FloorVerdict = string | undefined;

export class RegisterFloor {
  readonly #file: string | undefined;
  readonly #floors: Map<string, FloorMark>;
  #writes: Promise<void> = Promise.resolve();
  #lastWriteError: string | undefined;

  /** `file`: the state file (read now; a damaged one throws); none: the floor lives in memory only. */
  constructor(file?: string) {
    this.#file = file;
    this.#floors = file === undefined ? new Map() : readStateFile(file);
  }

  get stateFile(): string | undefined {
    return this.#file;
  }

  /** Why the last write of the state file failed, while it has not succeeded since. */
  get writeError(): string | undefined {
    return this.#lastWriteError;
  }

  /** The highest seq accepted for the document at `url`. */
  seqOf(url: string): number | undefined {
    return this.#floors.get(url)?.seq;
  }

  /** Whether a document may be taken: a strictly higher seq, or the same document again. */
  check(url: string, seq: number, digest: string): FloorVerdict {
    const mark = this.#floors.get(url);
    if (mark === undefined || seq > mark.seq) return undefined;
    if (seq === mark.seq && digest === mark.digest) return undefined;
    if (seq === mark.seq)
      return `the register's seq ${seq} is that of the copy already accepted, but the document differs (a second copy under one seq is refused)`;
    return `the register's seq ${seq} is lower than ${mark.seq}, the highest this gate has accepted (a replayed or rolled-back copy is refused)`;
  }

  /**
   * Raises the floor of `url` (the caller checked it first) and, with a state file, writes it before
   * resolving. A failed write is kept in `writeError` (the floor in memory still holds) and retried
   * with the next accepted document.
   */
  async raise(url: string, mark: FloorMark): Promise<void> {
    const held = this.#floors.get(url);
    if (held !== undefined && held.seq === mark.seq && held.digest === mark.digest) return;
    this.#floors.delete(url);
    this.#floors.set(url, mark);
    if (this.#floors.size > floorLimit) {
      const oldest = this.#floors.keys().next().value;
      if (oldest !== undefined) this.#floors.delete(oldest);
    }
    const file = this.#file;
    if (file === undefined) return;
    // One write at a time; each writes the floors as they are when its turn comes.
    this.#writes = this.#writes.then(() =>
      writeStateFile(file, this.#floors).then(
        () => {
          this.#lastWriteError = undefined;
        },
        (error: unknown) => {
          this.#lastWriteError = `the register state file ${file} could not be written (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); the floor is kept in memory until it can`;
        },
      ),
    );
    await this.#writes;
  }
}
