import { ServiceError } from '../../errors.js';
import { seal, unseal } from '../../secrets.js';

/**
 * Webhook signing secrets at rest. Standard Webhooks signs with a shared (symmetric) secret, so the
 * service must be able to read it again: it cannot be hashed. It is sealed like every secret the service
 * keeps and uses again (secrets.ts: AES-256-GCM under the secrets key, from `SECRETS_KEY_FILE` or else
 * derived from the attestation key), bound to the webhook's id: a copy of the database alone yields no
 * webhook secret, and a sealed value copied to another webhook's row does not open. Changing the secrets
 * key (or, without `SECRETS_KEY_FILE`, rotating the attestation key) makes them unreadable: add the
 * webhooks again after such a change.
 */
const context = (webhookId: string) => `webhook secret ${webhookId}`;

export function sealSecret(secretsKey: Buffer, webhookId: string, secret: string): string {
  return seal(secretsKey, secret, context(webhookId));
}

export function openSecret(secretsKey: Buffer, webhookId: string, sealed: string): string {
  try {
    return unseal(secretsKey, sealed, context(webhookId));
  } catch {
    throw new ServiceError(
      'ERR_SECRETS_KEY',
      `the signing secret of webhook ${webhookId} cannot be opened with this secrets key (was SECRETS_KEY_FILE changed, or the attestation key rotated without one?): add the webhook again`,
    );
  }
}
