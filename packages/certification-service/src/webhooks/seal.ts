import { createCipheriv, createDecipheriv, hkdfSync, type KeyObject, randomBytes } from 'node:crypto';

/**
 * Webhook signing secrets at rest. Standard Webhooks signs with a shared (symmetric) secret, so the
 * service must be able to read it again: it cannot be hashed. It is sealed with AES-256-GCM under a key
 * derived (HKDF-SHA256) from the attestation key, which every instance already holds and nothing else in
 * the database reveals: a copy of the database alone yields no webhook secret.
 *
 * This is a seam: when the service gains one encryption-at-rest key for all its secrets, `seal`/`open`
 * move onto it (the `v1.` prefix lets both formats be read during the change). Rotating the attestation
 * key makes the sealed secrets unreadable: add the webhooks again after a rotation.
 */
function sealingKey(attestationKey: KeyObject): Buffer {
  const material = attestationKey.export({ type: 'pkcs8', format: 'der' });
  return Buffer.from(
    hkdfSync('sha256', material, 'partner-certification-service', 'webhook-secret-sealing v1', 32),
  );
}

export function sealSecret(attestationKey: KeyObject, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealingKey(attestationKey), iv);
  const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return `v1.${iv.toString('base64url')}.${sealed.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}`;
}

export function openSecret(attestationKey: KeyObject, sealed: string): string {
  const [version, iv, body, tag] = sealed.split('.');
  if (version !== 'v1' || !iv || body === undefined || !tag)
    throw new Error('a webhook secret is stored in an unknown format: add the webhook again');
  try {
    const decipher = createDecipheriv(
      'aes-256-gcm',
      sealingKey(attestationKey),
      Buffer.from(iv, 'base64url'),
    );
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString(
      'utf8',
    );
  } catch {
    throw new Error(
      'a webhook secret cannot be opened with this attestation key (was the key rotated?): add the webhook again',
    );
  }
}
