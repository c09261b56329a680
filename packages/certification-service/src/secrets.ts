import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * A new secret: a prefix that says what it is (so a leaked one is recognised by secret scanners and
 * people alike) and 32 random bytes. Only its hash is stored.
 */
export function newSecret(prefix: 'pcs_key' | 'pcs_reviewer' | 'pcs_session'): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
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

/** A random id with a readable prefix (`run_…`, `ptn_…`, `rev_…`, `dec_…`). */
export function newId(prefix: 'run' | 'ptn' | 'rev' | 'dec'): string {
  return `${prefix}_${randomBytes(12).toString('base64url')}`;
}
