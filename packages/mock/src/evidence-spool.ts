import { type FileHandle, open, rename, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { MockError } from './errors.js';
import { type EvidenceRecord, isEvidenceRecord } from './evidence-record.js';

/**
 * The evidence spool (`--evidence-spool FILE`): what the gate has not yet had acknowledged, kept on
 * disk so that a restart — SIGTERM or SIGKILL — sends it again. Append-only lines: a batch
 * (`{"id","dropped","records"}`, flushed with fsync before it is sent the first time) and, once the
 * service answered 2xx, its acknowledgement (`{"ack":"<id>"}`). When nothing is left unacknowledged
 * the file is emptied; when it would outgrow its bound it is rewritten with the unacknowledged batches
 * alone (a temporary file, fsync, rename), and a batch that still does not fit is not taken (the
 * reporter counts it dropped). At start a torn last line (a gate killed while writing) is skipped.
 */

/** A batch as sent: its Idempotency-Key, the drops it reports and its records. */
export interface EvidenceBatch {
  readonly id: string;
  readonly dropped: number;
  readonly records: readonly EvidenceRecord[];
}

const spoolError = (message: string, cause?: unknown): never => {
  throw new MockError('ERR_MOCK_EVIDENCE_SPOOL', message, cause === undefined ? undefined : { cause });
};

const lineOf = (batch: EvidenceBatch) =>
  `${JSON.stringify({ id: batch.id, dropped: batch.dropped, records: batch.records })}\n`;

function parseLines(text: string): { batches: EvidenceBatch[]; damaged: number } {
  const batches = new Map<string, EvidenceBatch>();
  let damaged = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      damaged += 1;
      continue;
    }
    const item = (value ?? {}) as { ack?: unknown; id?: unknown; dropped?: unknown; records?: unknown };
    if (typeof item.ack === 'string') batches.delete(item.ack);
    else if (
      typeof item.id === 'string' &&
      typeof item.dropped === 'number' &&
      Array.isArray(item.records) &&
      item.records.every(isEvidenceRecord)
    )
      batches.set(item.id, { id: item.id, dropped: item.dropped, records: item.records });
    else damaged += 1;
  }
  return { batches: [...batches.values()], damaged };
}

async function syncDirectory(file: string): Promise<void> {
  const directory = await open(dirname(file), 'r').catch(() => undefined);
  if (directory === undefined) return;
  await directory.sync().catch(() => undefined);
  await directory.close();
}

export class EvidenceSpool {
  readonly file: string;
  readonly #maxBytes: number;
  #handle: FileHandle;
  #size: number;
  /** The batches written and not acknowledged, in order. */
  readonly #unacked = new Map<string, EvidenceBatch>();
  /** One file operation at a time, in order. */
  #queue: Promise<unknown> = Promise.resolve();

  private constructor(file: string, maxBytes: number, handle: FileHandle, size: number) {
    this.file = file;
    this.#maxBytes = maxBytes;
    this.#handle = handle;
    this.#size = size;
  }

  /**
   * Opens the spool: reads what a previous run left unacknowledged (returned, to be sent first, in
   * order) and rewrites the file with it alone. A missing file is created (its directory must exist);
   * one that is not a regular file, cannot be read or written, or is far larger than its bound stops
   * the start, naming the file.
   */
  static async open(
    file: string,
    maxBytes: number,
  ): Promise<{ spool: EvidenceSpool; batches: EvidenceBatch[]; damaged: number }> {
    let text = '';
    try {
      const stats = await stat(file);
      if (!stats.isFile())
        spoolError(
          `the evidence spool ${file} is not a regular file; give the path of a file (it is created when missing).`,
        );
      if (stats.size > maxBytes + 1024 * 1024)
        spoolError(
          `the evidence spool ${file} is ${stats.size} bytes, more than its bound of ${maxBytes} (--evidence-spool-bytes); was it written by something else? Move it away (what it holds is then not sent) or raise the bound.`,
        );
      const handle = await open(file, 'r');
      try {
        text = await handle.readFile('utf8');
      } finally {
        await handle.close();
      }
    } catch (cause) {
      if (cause instanceof MockError) throw cause;
      const code = (cause as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT')
        spoolError(
          `cannot read the evidence spool ${file}: ${code ?? 'error'}. Check its permissions.`,
          cause,
        );
    }
    const { batches, damaged } = parseLines(text);
    const content = batches.map(lineOf).join('');
    const temporary = `${file}.${process.pid}.tmp`;
    let handle: FileHandle;
    try {
      const writer = await open(temporary, 'w', 0o600);
      try {
        await writer.writeFile(content);
        await writer.sync();
      } finally {
        await writer.close();
      }
      await rename(temporary, file);
      await syncDirectory(file);
      handle = await open(file, 'a');
    } catch (cause) {
      await rm(temporary, { force: true }).catch(() => undefined);
      return spoolError(
        `cannot write the evidence spool ${file}: ${(cause as NodeJS.ErrnoException).code ?? 'error'}. Its directory must exist and be writable.`,
        cause,
      );
    }
    const spool = new EvidenceSpool(file, maxBytes, handle, Buffer.byteLength(content));
    for (const batch of batches) spool.#unacked.set(batch.id, batch);
    return { spool, batches, damaged };
  }

  /** Bytes in the file now. */
  get bytes(): number {
    return this.#size;
  }

  #serial<T>(operation: () => Promise<T>): Promise<T> {
    const result = this.#queue.then(operation);
    this.#queue = result.catch(() => undefined);
    return result;
  }

  /** Writes a batch and flushes it to disk; false when it does not fit (the spool is full). */
  append(batch: EvidenceBatch): Promise<boolean> {
    return this.#serial(async () => {
      const line = lineOf(batch);
      const bytes = Buffer.byteLength(line);
      if (this.#size + bytes > this.#maxBytes) await this.#compact();
      if (this.#size + bytes > this.#maxBytes) return false;
      await this.#handle.appendFile(line);
      await this.#handle.datasync();
      this.#size += bytes;
      this.#unacked.set(batch.id, batch);
      return true;
    });
  }

  /** The service acknowledged a batch: noted (not flushed: a lost note only means one more send). */
  ack(id: string): Promise<void> {
    return this.#serial(async () => {
      if (!this.#unacked.delete(id)) return;
      if (this.#unacked.size === 0) {
        await this.#handle.truncate(0);
        this.#size = 0;
        return;
      }
      const line = `${JSON.stringify({ ack: id })}\n`;
      await this.#handle.appendFile(line);
      this.#size += Buffer.byteLength(line);
    });
  }

  /** Rewrites the file with the unacknowledged batches alone. */
  async #compact(): Promise<void> {
    const content = [...this.#unacked.values()].map(lineOf).join('');
    const temporary = `${this.file}.${process.pid}.tmp`;
    const writer = await open(temporary, 'w', 0o600);
    try {
      await writer.writeFile(content);
      await writer.sync();
    } finally {
      await writer.close();
    }
    await rename(temporary, this.file);
    await syncDirectory(this.file);
    await this.#handle.close();
    this.#handle = await open(this.file, 'a');
    this.#size = Buffer.byteLength(content);
  }

  /** Flushes and closes the file (what is unacknowledged stays in it for the next start). */
  close(): Promise<void> {
    return this.#serial(async () => {
      await this.#handle.sync().catch(() => undefined);
      await this.#handle.close();
    });
  }
}
