/**
 * Reading a body with a bound, once for the packages: the gate's register and change notice, the
 * evidence sender's answers, the conformance probe's answers and the certification service's evidence
 * uploads. A body that goes on past the bound is cancelled there, so an endless one costs at most the
 * bound in memory.
 */

/** What `readCapped` does with a body longer than its limit. */
export interface ReadCappedOptions {
  /**
   * `refuse` (default): the body reads as `undefined` (nothing of it is kept), decoded as UTF-8 with
   * Buffer (a leading byte order mark stays in the text). `truncate`: its first `limit` bytes are kept
   * and `truncatedAt` says how many were read when it stopped; decoded with TextDecoder (a leading
   * byte order mark is dropped), as a client reading an answer would.
   */
  over?: 'refuse' | 'truncate';
}

/** A body read with `over: 'truncate'`: its text, and how many bytes were read when it was cut. */
export interface CappedText {
  text: string;
  /** Present when the body was longer than the limit: the bytes read when reading stopped. */
  truncatedAt?: number;
}

/**
 * The bytes of a stream up to `limit`; `undefined` when it is longer (the rest is cancelled, not read).
 * A missing stream is an empty body.
 */
export async function readStreamCapped(
  stream: ReadableStream<Uint8Array> | null | undefined,
  limit: number,
): Promise<Buffer | undefined> {
  const read = await readUpTo(stream, limit, false);
  return read.truncatedAt === undefined ? read.bytes : undefined;
}

/** Reads a response body up to `limit` bytes: see `ReadCappedOptions.over` for a longer one. */
export function readCapped(
  response: Response,
  limit: number,
  options?: { over?: 'refuse' },
): Promise<string | undefined>;
export function readCapped(
  response: Response,
  limit: number,
  options: { over: 'truncate' },
): Promise<CappedText>;
export async function readCapped(
  response: Response,
  limit: number,
  options: ReadCappedOptions = {},
): Promise<string | undefined | CappedText> {
  if (options.over === 'truncate') {
    const { bytes, truncatedAt } = await readUpTo(response.body, limit, true);
    const text = new TextDecoder().decode(bytes);
    return truncatedAt === undefined ? { text } : { text, truncatedAt };
  }
  return (await readStreamCapped(response.body, limit))?.toString('utf8');
}

/** The stream's bytes up to `limit`; past it, `truncatedAt` (and, with `keepHead`, the first `limit` bytes). */
async function readUpTo(
  stream: ReadableStream<Uint8Array> | null | undefined,
  limit: number,
  keepHead: boolean,
): Promise<{ bytes: Buffer; truncatedAt?: number }> {
  if (!stream) return { bytes: Buffer.alloc(0) };
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { bytes: Buffer.concat(chunks, size) };
    size += value.byteLength;
    if (size > limit) {
      if (keepHead) chunks.push(value.subarray(0, value.byteLength - (size - limit)));
      await reader.cancel().catch(() => undefined);
      return { bytes: keepHead ? Buffer.concat(chunks) : Buffer.alloc(0), truncatedAt: size };
    }
    chunks.push(value);
  }
}
