import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { usageError } from '../errors.js';

/**
 * Reads a file a reviewer was handed: only a regular file (a FIFO, a socket, a device or a directory
 * is refused at once, without blocking on it) of at most `maxBytes`. Every refusal is a usage error
 * (exit 2) that says what the file is and what was expected.
 */
export async function readRegularFile(path: string, maxBytes: number, what: string): Promise<Buffer> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer.
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (cause) {
    throw usageError(`cannot read the ${what} ${path}: ${(cause as Error).message}`);
  }
  try {
    const info = await handle.stat();
    if (!info.isFile())
      throw usageError(
        `${path} is not a regular file (${info.isFIFO() ? 'a FIFO' : info.isDirectory() ? 'a directory' : info.isSocket() ? 'a socket' : 'a device'}); pass the ${what} itself`,
      );
    if (info.size > maxBytes)
      throw usageError(`${path} is ${info.size} bytes, over the ${maxBytes}-byte limit of a ${what}`);
    const buffer = Buffer.alloc(info.size);
    let read = 0;
    while (read < info.size) {
      const { bytesRead } = await handle.read(buffer, read, info.size - read, read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    return buffer.subarray(0, read);
  } finally {
    await handle.close();
  }
}
