import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { usageError } from '../errors.js';
import { type ClientSession, parseSession } from './session.js';
import { maxSessionBytes } from './session-schema.js';

/** A session read from a file: the session, and the SHA-256 of the exact bytes judged. */
export interface SessionFile {
  session: ClientSession;
  sha256: string;
  bytes: number;
}

/**
 * Reads a session file a reviewer was handed: only a regular file (a FIFO, a device or a directory is
 * refused without blocking on it), at most 100 MiB, then the session schema. Every refusal is a usage
 * error (exit 2) that says what the file is and what was expected.
 */
export async function readSessionFile(path: string): Promise<SessionFile> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer.
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (cause) {
    throw usageError(`cannot read the session file ${path}: ${(cause as Error).message}`);
  }
  try {
    const info = await handle.stat();
    if (!info.isFile())
      throw usageError(
        `${path} is not a regular file (${info.isFIFO() ? 'a FIFO' : info.isDirectory() ? 'a directory' : info.isSocket() ? 'a socket' : 'a device'}); pass the session file written by --save-session or served by the certification service`,
      );
    if (info.size > maxSessionBytes)
      throw usageError(
        `${path} is ${info.size} bytes, over the ${maxSessionBytes}-byte limit of a session file (50,000 exchanges fit well under it); it is not a session this suite wrote`,
      );
    const buffer = Buffer.alloc(info.size);
    let read = 0;
    while (read < info.size) {
      const { bytesRead } = await handle.read(buffer, read, info.size - read, read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    const bytes = buffer.subarray(0, read);
    return {
      session: parseSession(bytes.toString('utf8'), path),
      sha256: createHash('sha256').update(bytes).digest('hex'),
      bytes: read,
    };
  } finally {
    await handle.close();
  }
}
