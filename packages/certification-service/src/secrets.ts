import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  hkdfSync,
  type KeyObject,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto';
import { ServiceError } from './errors.js';

/**
 * A new secret: a prefix that says what it is (so a leaked one is recognised by secret scanners and
 * people alike) and 32 random bytes, base64url (43 characters after the prefix's `_`; 44 in base64).
 * Only its hash is stored, except a webhook's signing secret (`whsec_…`): Standard Webhooks writes it
 * in `encoding: 'base64'`, and the service keeps it sealed, since it signs with it again.
 */
export function newSecret(
  prefix: 'pcs_key' | 'pcs_reviewer' | 'pcs_session' | 'pcs_register' | 'pcs_evidence' | 'whsec',
  { encoding = 'base64url' }: { encoding?: 'base64url' | 'base64' } = {},
): string {
  return `${prefix}_${randomBytes(32).toString(encoding)}`;
}

/**
 * SHA-256 of a secret, hex. A fast hash is enough here: every secret is 256 random bits, which no
 * dictionary holds and no brute force reaches (a password hash's slowness protects low-entropy input).
 */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** Compares two strings in time that does not depend on where they differ. */
export function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * A run's address: the path segment of its token endpoint and partner API, 192 random bits. It is a
 * capability shown only to the run's partner (in the answer that creates the run), kept apart from the run's
 * id, which reviewers, the audit log and the service's log lines name.
 */
export function newRunAddress(): string {
  return `ra_${randomBytes(24).toString('base64url')}`;
}

/**
 * A random id with a readable prefix and 96 random bits, base64url (16 characters after the `_`): a run
 * (`run_…`), a decision (`dec_…`), a regression (`reg_…`), and the principals (`ptn_…` a partner,
 * `rev_…` a reviewer, `rdr_…` a register reader, `evr_…` an evidence reporter, `whk_…` a webhook).
 */
export function newId(prefix: 'run' | 'ptn' | 'rev' | 'dec' | 'reg' | 'rdr' | 'evr' | 'whk'): string {
  return `${prefix}_${randomBytes(12).toString('base64url')}`;
}

/**
 * The key the service seals its reusable secrets with (32 bytes): HKDF-SHA256 of the operator's
 * `SECRETS_KEY_FILE` text, or — when none is given — of the attestation key's private bytes, so that
 * every instance holding the same key files opens what another sealed, and a copy of the database
 * alone opens nothing.
 */
export function secretsKeyFrom(material: KeyObject | string): Buffer {
  const bytes =
    typeof material === 'string'
      ? Buffer.from(material.trim())
      : material.export({ format: 'der', type: 'pkcs8' });
  return Buffer.from(hkdfSync('sha256', bytes, 'partner-certification-service', 'secrets at rest v1', 32));
}

/**
 * Seals `plain` with AES-256-GCM under `key`: `v1.<iv>.<ciphertext>.<tag>` (base64url). `context`
 * (e.g. the run's id) is authenticated with it, so a sealed value copied to another row does not open.
 */
export function seal(key: Buffer, plain: string, context: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(context));
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return ['v1', iv, body, cipher.getAuthTag()]
    .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
    .join('.');
}

/** Opens what `seal` sealed under the same key and context; throws when either differs or it was altered. */
export function unseal(key: Buffer, sealed: string, context: string): string {
  const [version, iv, body, tag] = sealed.split('.');
  if (version !== 'v1' || !iv || body === undefined || !tag)
    throw new ServiceError(
      'ERR_SECRETS_KEY',
      'not a sealed value of this service (expected v1.<iv>.<ciphertext>.<tag>)',
    );
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAAD(Buffer.from(context));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
}

/**
 * A secret derived from `key` for one purpose and subject (HMAC-SHA256, base64url): the same on every
 * instance with the same key, so it need not be stored at all (a run's client secret; a session's CSRF
 * token, keyed by the session token itself).
 */
export function derivedSecret(key: Buffer | string, purpose: string, subject: string): string {
  return createHmac('sha256', key).update(`${purpose}\u0000${subject}`).digest('base64url');
}
