import { randomBytes } from 'node:crypto';
import type { Queryable } from '../db/database.js';
import type { WebhookEventData, WebhookEventType } from './events.js';

/**
 * Writes an event to the outbox, inside the caller's transaction: the event and one delivery per
 * webhook subscribed to its type commit with the change they announce, or not at all. Its id
 * (`msg_…`) is the `webhook-id` of every attempt. With `dedupeKey`, an event already written under that
 * key is not written again (an expiry notice announced by two instances at once); returns the event
 * id, or undefined when it was already there.
 */
export async function enqueueEvent(
  tx: Queryable,
  event: { type: WebhookEventType; data: WebhookEventData; at?: Date; dedupeKey?: string },
): Promise<string | undefined> {
  const id = `msg_${randomBytes(16).toString('base64url')}`;
  const at = event.at ?? new Date();
  const body = JSON.stringify({ type: event.type, timestamp: at.toISOString(), data: event.data });
  const [inserted] = await tx.query<{ id: string }>(
    `INSERT INTO webhook_events (id, type, partner_id, body, dedupe_key) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (dedupe_key) DO NOTHING RETURNING id`,
    [id, event.type, event.data.partnerId, body, event.dedupeKey ?? null],
  );
  if (!inserted) return undefined;
  await tx.query(
    `INSERT INTO webhook_deliveries (id, event_id, webhook_id, ordering_key, status)
     SELECT 'dlv_' || md5($1 || w.id), $1, w.id, $2, 'pending' FROM webhooks w
     WHERE w.events @> to_jsonb($3::text) ORDER BY w.created_at, w.id`,
    [id, event.data.partnerId, event.type],
  );
  return id;
}
