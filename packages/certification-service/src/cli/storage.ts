import { mkdirSync, readFileSync } from 'node:fs';
import { type Database, openDatabase } from '../db/database.js';
import { fail } from './usage.js';

/** `dir`, created (mode 0700) when missing. */
export async function ensureDir(dir: string): Promise<string> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/** Which store a command wrote to or serves, for a person. */
export const storeName = (db: Database) =>
  db.kind === 'embedded'
    ? `embedded PGlite in ${db.where}`
    : `PostgreSQL at ${db.where}${db.journalDir !== undefined ? `, served by this instance alone (journal in ${db.journalDir})` : ''}`;

/** The database an admin command writes to. */
export async function openStorage(databaseUrl: string | undefined, dataDir: string): Promise<Database> {
  return openDatabase({ databaseUrl, dataDir });
}

/** The text of SECRETS_KEY_FILE (at least 32 characters once trimmed), or undefined when it is not set. */
export function readSecretsKey(file: string | undefined): string | undefined {
  if (!file) return undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (error) {
    fail(
      `SECRETS_KEY_FILE ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}): give the path of a file holding at least 32 random characters (e.g. openssl rand -base64 32 > FILE).`,
    );
  }
  if (text.length < 32)
    fail(
      `SECRETS_KEY_FILE ${file} holds ${text.length} characters, expected at least 32 random ones (e.g. openssl rand -base64 32 > FILE).`,
    );
  return text;
}
