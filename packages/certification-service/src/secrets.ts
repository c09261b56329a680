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

/** A random id with a readable prefix (`run_…`, `ptn_…`, `rev_…`, `dec_…`). */
export function newId(prefix: 'run' | 'ptn' | 'rev' | 'dec'): string {
  return `${prefix}_${randomBytes(12).toString('base64url')}`;
}
