import { createHash } from 'node:crypto';
import { readRegularFile } from '../common/regular-file.js';
import { type ClientSession, parseSession } from './session.js';
import { maxSessionBytes } from './session-schema.js';

/** A session read from a file: the session, and the SHA-256 of the exact bytes judged. */
export interface SessionFile {
  session: ClientSession;
  sha256: string;
  bytes: number;
}

/**
 * Reads a session file a reviewer was handed: a regular file of at most 100 MiB (50,000 exchanges fit
 * well under it), then the session schema. Every refusal is a usage error (exit 2).
 */
export async function readSessionFile(path: string): Promise<SessionFile> {
  const bytes = await readRegularFile(path, maxSessionBytes, 'session file');
  return {
    session: parseSession(bytes.toString('utf8'), path),
    sha256: createHash('sha256').update(bytes).digest('hex'),
    bytes: bytes.length,
  };
}
