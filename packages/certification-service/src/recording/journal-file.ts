import {
  close as closeLater,
  closeSync,
  mkdirSync,
  open as openLater,
  openSync,
  readdirSync,
  readFileSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { InternalError } from '../errors.js';

/**
 * The embedded store's journal of answered calls: an append-only file each exchange is written to
 * (write(2), before its answer leaves) and from which the database is filled in the background, in
 * segments that are deleted once what they hold is committed. The tokens a run's stage issues and
 * revokes are written there too, before their answers leave. Written by one process (the embedded
 * database's directory is locked), read back at start-up by the next one: a process killed at any
 * point loses nothing it answered. (The embedded database writes its own files the same way, with no
 * fsync: both outlive the process, neither a power cut of the machine.)
 *
 * A line is a header, a tab, and a JSON text (JSON text holds no raw tab or line break, so a line is
 * read back by its first tab):
 * - an exchange: `[runId, seq, scenarioState (its JSON as a string) | null]`, then the exchange's JSON;
 * - a token issued: `{"issued": runId, "number": n, "sha256": hex}`, then the token's JSON;
 * - a token revoked: `{"revoked": runId, "number": n}`, then the token's JSON as it is now.
 * A torn last line (the process killed in the middle of a write) was never answered, and is skipped.
 */
export type JournalEntry = ExchangeEntry | IssuedEntry | RevokedEntry;

export interface ExchangeEntry {
  kind?: undefined;
  runId: string;
  seq: number;
  /** The exchange as stored (JSON text on one line). */
  exchange: string;
  /** The run's scenario state after this call (JSON), when it changed. */
  scenarioState?: string | undefined;
}

/** A token the run's stage issued: its number in the run (`T1`, `T2`, …) and its value's SHA-256. */
export interface IssuedEntry {
  kind: 'issued';
  runId: string;
  number: number;
  sha256: string;
  /** The token's record (JSON text on one line), without its reference. */
  token: string;
}

/** A token the run's plan revoked: its number, and its record as it is now (JSON text on one line). */
export interface RevokedEntry {
  kind: 'revoked';
  runId: string;
  number: number;
  token: string;
}

export interface JournalFile {
  /** Appends entries to the current segment; returns once the system has them. */
  append(entries: readonly JournalEntry[]): void;
  /**
   * Starts a new segment for what comes next; the function it returns deletes the segments before it
   * (call it once everything they hold is committed). Neither creates nor deletes a file on the
   * calling thread: the next segment was opened ahead, and the old ones go on libuv's pool.
   */
  rotate(): () => Promise<void>;
  /**
   * Closes the current segment (deleted when `empty` says nothing is left to commit), and the one
   * opened ahead once it is open.
   */
  close(empty: boolean): Promise<void>;
}

const segmentPattern = /^exchanges-(\d{12})\.ndjson$/;
const segmentName = (number: number) => `exchanges-${String(number).padStart(12, '0')}.ndjson`;

/** The segments in `dir`, oldest first. */
function segments(dir: string): { number: number; path: string }[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return segmentsOf(dir, names);
}

/** The segments among `names` (a listing of `dir`), oldest first. */
function segmentsOf(dir: string, names: readonly string[]): { number: number; path: string }[] {
  return names
    .map((name) => segmentPattern.exec(name))
    .filter((match): match is RegExpExecArray => match !== null)
    .map((match) => ({ number: Number(match[1]), path: join(dir, match[0]) }))
    .sort((a, b) => a.number - b.number);
}

export const journalLine = (entry: JournalEntry): string => {
  switch (entry.kind) {
    case 'issued':
      return `${JSON.stringify({ issued: entry.runId, number: entry.number, sha256: entry.sha256 })}\t${entry.token}\n`;
    case 'revoked':
      return `${JSON.stringify({ revoked: entry.runId, number: entry.number })}\t${entry.token}\n`;
    default:
      return `${JSON.stringify([entry.runId, entry.seq, entry.scenarioState ?? null])}\t${entry.exchange}\n`;
  }
};

const isNumber = (value: unknown): value is number => Number.isInteger(value) && (value as number) > 0;

/** One line's entry; undefined for a line that is not one (a torn write). */
function entryOf(header: unknown, body: string): JournalEntry | undefined {
  if (Array.isArray(header)) {
    const [runId, seq, scenarioState] = header as unknown[];
    if (typeof runId !== 'string' || !Number.isInteger(seq)) return undefined;
    return {
      runId,
      seq: seq as number,
      exchange: body,
      ...(typeof scenarioState === 'string' && { scenarioState }),
    };
  }
  if (typeof header !== 'object' || header === null) return undefined;
  const { issued, revoked, number, sha256 } = header as Record<string, unknown>;
  if (typeof issued === 'string' && isNumber(number) && typeof sha256 === 'string')
    return { kind: 'issued', runId: issued, number, sha256, token: body };
  if (typeof revoked === 'string' && isNumber(number))
    return { kind: 'revoked', runId: revoked, number, token: body };
  return undefined;
}

/** Reads one segment's text back; a line that does not parse (a torn last write) is skipped. */
export function parseJournalFile(text: string): JournalEntry[] {
  const entries: JournalEntry[] = [];
  for (const line of text.split('\n')) {
    const tab = line.indexOf('\t');
    if (tab < 0) continue;
    try {
      const header = JSON.parse(line.slice(0, tab)) as unknown;
      const body = line.slice(tab + 1);
      JSON.parse(body);
      const entry = entryOf(header, body);
      if (entry) entries.push(entry);
    } catch {
      // A torn write: never answered.
    }
  }
  return entries;
}

/** What earlier processes left in `dir`, oldest first, and a function deleting those segments. */
export function readJournalFile(dir: string): { entries: JournalEntry[]; remove: () => void } {
  const found = segments(dir);
  return {
    entries: found.flatMap((segment) => parseJournalFile(readFileSync(segment.path, 'utf8'))),
    remove: () => {
      for (const segment of found) unlinkSync(segment.path);
    },
  };
}

/** Opens a new segment in `dir` (created, mode 0700), after any left there. */
export function openJournalFile(dir: string): JournalFile {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  let number = (segments(dir).at(-1)?.number ?? 0) + 1;
  const pathOf = (n: number) => join(dir, segmentName(n));
  let fd = openSync(pathOf(number), 'a', 0o600);
  let closed = false;
  /**
   * The next segment, opened ahead on libuv's pool: creating a file waits for the file system's
   * journal (0.3 ms on average and up to milliseconds on ext4 while the embedded database writes), which
   * the thread serving the answers need not wait for. Its descriptor once open; an error or no answer
   * yet leaves the rotation to open it itself.
   */
  let ahead: { number: number; fd?: number; opened: Promise<void> } | undefined;
  const openAhead = () => {
    const next = { number: number + 1 } as NonNullable<typeof ahead>;
    ahead = next;
    next.opened = new Promise((resolve) => {
      openLater(pathOf(next.number), 'a', 0o600, (error, opened) => {
        if (!error) {
          // Superseded (the rotation could not wait for it): the rotation's own descriptor is the one kept.
          if (ahead !== next) closeLater(opened, () => {});
          else next.fd = opened;
        }
        resolve();
      });
    });
  };
  openAhead();
  /** Deletes the segments numbered up to `last` (one already gone is not an error). */
  const removeUpTo = async (last: number) => {
    for (const segment of segmentsOf(dir, await readdir(dir)))
      if (segment.number <= last)
        await unlink(segment.path).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== 'ENOENT') throw error;
        });
  };
  return {
    append(entries) {
      if (closed) throw new InternalError('the journal file is closed');
      let text = '';
      for (const entry of entries) text += journalLine(entry);
      const bytes = Buffer.from(text, 'utf8');
      for (let written = 0; written < bytes.length; )
        written += writeSync(fd, bytes, written, bytes.length - written);
    },
    rotate() {
      const before = number;
      // Every write to it has returned (they are synchronous): closing can wait on the pool.
      closeLater(fd, () => {});
      number += 1;
      const next = ahead;
      ahead = undefined;
      if (next?.fd !== undefined) fd = next.fd;
      else fd = openSync(pathOf(number), 'a', 0o600);
      openAhead();
      return () => removeUpTo(before);
    },
    async close(empty) {
      if (closed) return;
      closed = true;
      closeSync(fd);
      const next = ahead;
      await next?.opened;
      if (next?.fd !== undefined) closeSync(next.fd);
      ahead = undefined;
      if (empty) for (const segment of segments(dir)) unlinkSync(segment.path);
    },
  };
}
