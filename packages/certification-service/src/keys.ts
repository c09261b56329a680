import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parsePrivateKey, publicJwk } from '@partner-lending/conformance';
import type { Database } from './db/database.js';
import { ServiceError } from './errors.js';
import type { LogLine } from './observability/logger.js';

/** The key that signs attestations, and its public JWK (`kid`: its RFC 7638 thumbprint). */
export interface SigningKey {
  privateKey: KeyObject;
  kid: string;
  jwk: Awaited<ReturnType<typeof publicJwk>>;
  /** Where it came from, for the start-up line: the file, or "generated into …". */
  source: string;
}

/**
 * Loads `SIGNING_KEY_FILE` (a private JWK or PEM, Ed25519 or ES256), or — when it is not set — the
 * key generated into the data directory on an earlier start, or a new Ed25519 key written there
 * (mode 0600) with a warning: attestations then depend on that directory's backups.
 */
export function loadSigningKey(options: {
  file?: string | undefined;
  dataDir: string;
  warn: LogLine;
}): Promise<SigningKey> {
  if (options.file) {
    let text: string;
    try {
      text = readFileSync(options.file, 'utf8');
    } catch (error) {
      throw new ServiceError(
        'ERR_SIGNING_KEY',
        `SIGNING_KEY_FILE ${options.file} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}): give the path of a private key file, JWK or PEM, Ed25519 or ES256.`,
      );
    }
    return withJwk(readKey(text, `SIGNING_KEY_FILE ${options.file}`), options.file);
  }
  const generated = join(options.dataDir, 'signing-key.pem');
  if (existsSync(generated))
    return withJwk(readKey(readFileSync(generated, 'utf8'), generated), `${generated} (generated earlier)`);
  const { privateKey } = generateKeyPairSync('ed25519');
  writeFileSync(generated, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
  options.warn(
    `no SIGNING_KEY_FILE: generated an Ed25519 attestation key into ${generated}. Keep that file (and back it up), or set SIGNING_KEY_FILE to a key you manage; with several instances, give them all the same key file.`,
  );
  return withJwk(privateKey, `${generated} (generated now)`);
}

function readKey(text: string, where: string): KeyObject {
  try {
    return parsePrivateKey(text, where);
  } catch (error) {
    throw new ServiceError('ERR_SIGNING_KEY', (error as Error).message);
  }
}

async function withJwk(privateKey: KeyObject, source: string): Promise<SigningKey> {
  const jwk = await publicJwk(privateKey);
  return { privateKey, kid: jwk.kid, jwk, source };
}

/**
 * Publishes the key: every key that ever signed stays in the JWKS (rotation by `kid`), so that
 * attestations signed before a rotation still verify.
 */
export async function publishKey(db: Database, key: SigningKey): Promise<void> {
  await db.query('INSERT INTO signing_keys (kid, jwk) VALUES ($1, $2) ON CONFLICT (kid) DO NOTHING', [
    key.kid,
    JSON.stringify(key.jwk),
  ]);
}

/** The JWKS of every attestation key, newest first. */
export async function jwksOf(db: Database): Promise<{ keys: unknown[] }> {
  const rows = await db.query<{ jwk: unknown }>(
    'SELECT jwk FROM signing_keys ORDER BY first_used_at DESC, kid',
  );
  return { keys: rows.map((row) => row.jwk) };
}
