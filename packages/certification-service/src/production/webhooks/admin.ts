import type { Database } from '../../db/database.js';
import { UsageError } from '../../errors.js';
import type { WebhookEventType } from '../../outbox/events.js';
import { addPrincipal } from '../../principals.js';
import { sealSecret } from './seal.js';

/** Checks a webhook URL: http(s), no credentials or fragment, at most 2000 characters. */
export function webhookUrl(text: string): string {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {}
  if (
    !url ||
    !/^https?:$/.test(url.protocol) ||
    url.username ||
    url.password ||
    url.hash ||
    text.length > 2000
  )
    throw new UsageError(
      `--url takes an http(s) URL without credentials or fragment, e.g. https://partners.example.com/hooks/certification, got ${JSON.stringify(text.slice(0, 100))}`,
    );
  return url.href;
}

/**
 * Registers a webhook endpoint. Its signing secret (`whsec_` and 32 random bytes, base64, as Standard
 * Webhooks defines it) is returned once and stored sealed (see seal.ts): the service needs it again to
 * sign, so it cannot be hashed.
 */
export async function addWebhook(
  db: Database,
  /** The service's secrets key (`secretsKeyFrom`), the same as `serve` uses. */
  secretsKey: Buffer,
  input: { url: string; events: readonly WebhookEventType[] },
): Promise<{ webhookId: string; secret: string }> {
  const url = webhookUrl(input.url);
  const { id, secret } = await addPrincipal(
    db,
    'webhook',
    (webhookId, secret) => ({
      url,
      events: JSON.stringify(input.events),
      secret_sealed: sealSecret(secretsKey, webhookId, secret),
    }),
    { url, events: input.events },
  );
  return { webhookId: id, secret };
}

/** Sends a delivery again (as soon as the dispatcher runs), with the same `webhook-id`. */
export async function resendDelivery(db: Database, deliveryId: string): Promise<boolean> {
  const rows = await db.query(
    `UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at = now(), lease_until = NULL
     WHERE id = $1 AND NOT (status = 'pending' AND lease_until > now()) RETURNING id`,
    [deliveryId],
  );
  return rows.length > 0;
}
