import type { Database, Queryable } from '../db/types.js';
import { UsageError } from '../errors.js';
import { addNamedPrincipal } from '../principals.js';
import { hashSecret } from '../secrets.js';

/**
 * Adds an evidence reporter (a production gateway, or the process reading its logs): its id and key.
 * The key is shown here once; only its SHA-256 is stored, as for every secret of the service. The
 * audit log gains `evidence-reporter.added`.
 */
export async function addEvidenceReporter(
  db: Database,
  name: string,
): Promise<{ reporterId: string; key: string }> {
  const trimmed = name.trim();
  // biome-ignore lint/suspicious/noControlCharactersInRegex: a name with control characters is refused
  if (trimmed.length === 0 || trimmed.length > 100 || /[\u0000-\u001f\u007f]/.test(trimmed))
    throw new UsageError(
      'an evidence reporter needs a name of 1 to 100 printable characters, e.g. "production gateway eu-1"',
    );
  const { id, secret } = await addNamedPrincipal(db, 'evidence-reporter', trimmed);
  return { reporterId: id, key: secret };
}

/** The reporter an evidence key belongs to, or undefined. */
export async function evidenceReporterOf(db: Queryable, key: string): Promise<{ id: string } | undefined> {
  const [row] = await db.query<{ id: string }>('SELECT id FROM evidence_reporters WHERE key_hash = $1', [
    hashSecret(key),
  ]);
  return row;
}
