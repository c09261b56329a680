import { Webhook } from 'standardwebhooks';
import type { Database } from '../../db/database.js';
import type { LogLine } from '../../observability/logger.js';
import {
  type WebhookAttemptOutcome,
  webhookAttemptDuration,
  webhookAttempts,
  webhookDeliveriesFailed,
  webhookDeliveryLag,
} from '../../observability/metrics.js';
import { type DeliveryLimits, postWebhook } from './deliver.js';
import { openSecret } from './seal.js';

/** A delivery claimed for an attempt, with what the attempt needs. */
export interface Claimed {
  id: string;
  attempts: number;
  event_id: string;
  body: string;
  url: string;
  secret_sealed: string;
  webhook_id: string;
  /** Seconds since the delivery entered the outbox, at the claim. */
  age: string | number;
}

type Outcome = Awaited<ReturnType<typeof postWebhook>>;

/**
 * Claims up to 20 due deliveries (FOR UPDATE SKIP LOCKED, then a lease of `leaseSeconds`, so two
 * instances never attempt one delivery at once and a killed instance's claim lapses), only the oldest
 * pending delivery of each partner for each webhook (so events arrive in order per partner).
 */
export function claimDue(db: Database, leaseSeconds: number): Promise<Claimed[]> {
  return db.transaction((tx) =>
    tx.query<Claimed>(
      `WITH due AS (
         SELECT d.id FROM webhook_deliveries d
         WHERE d.status = 'pending' AND d.next_attempt_at <= now()
           AND (d.lease_until IS NULL OR d.lease_until < now())
           AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e
                           WHERE e.webhook_id = d.webhook_id AND e.ordering_key = d.ordering_key
                             AND e.status = 'pending' AND e.seq < d.seq)
         ORDER BY d.seq LIMIT 20 FOR UPDATE OF d SKIP LOCKED)
       UPDATE webhook_deliveries d SET lease_until = now() + make_interval(secs => $1), attempts = d.attempts + 1
       FROM due, webhook_events ev, webhooks w
       WHERE d.id = due.id AND ev.id = d.event_id AND w.id = d.webhook_id
       RETURNING d.id, d.attempts, d.event_id, ev.body, w.url, w.secret_sealed, w.id AS webhook_id,
         EXTRACT(EPOCH FROM now() - d.created_at) AS age`,
      [leaseSeconds],
    ),
  );
}

/**
 * One attempt of a claimed delivery: POSTed signed per Standard Webhooks, counted in the metrics, and
 * recorded with its next try (after `schedule`'s delay for this attempt, ±20 %), or `failed` when the
 * schedule has none left.
 */
export function deliveryAttempts(options: {
  db: Database;
  secretsKey: Buffer;
  schedule: readonly number[];
  limits: DeliveryLimits;
  log: LogLine;
}) {
  const { db, log } = options;
  const send = signedSender(options.secretsKey, options.limits);
  return async (delivery: Claimed) => {
    const outcome = await send(delivery);
    countAttempt(delivery, outcome);
    const delay = options.schedule[delivery.attempts - 1];
    const next =
      outcome.ok || delay === undefined
        ? null
        : new Date(Date.now() + delay * 1000 * (0.8 + Math.random() * 0.4));
    await recordAttempt(db, delivery, outcome, next);
    if (!outcome.ok && !next) webhookDeliveriesFailed.inc();
    if (!outcome.ok)
      log(
        `webhook ${delivery.webhook_id}: delivery ${delivery.event_id} attempt ${delivery.attempts} failed (${outcome.error ?? `answered ${outcome.status}`}); ${next ? `next try at ${next.toISOString()}` : 'no try left: resend it from the UI'}`,
        {
          event: next ? 'webhook.attempt_failed' : 'webhook.delivery_failed',
          webhookId: delivery.webhook_id,
          eventId: delivery.event_id,
          attempt: delivery.attempts,
          ...(typeof outcome.status === 'number' && { status: outcome.status }),
        },
      );
  };
}

/** POSTs a delivery signed with its webhook's secret (opened once per sealed secret); never throws. */
function signedSender(secretsKey: Buffer, limits: DeliveryLimits) {
  const signers = new Map<string, Webhook>();
  const signer = (webhookId: string, sealed: string) => {
    let found = signers.get(sealed);
    if (!found) {
      found = new Webhook(openSecret(secretsKey, webhookId, sealed));
      signers.set(sealed, found);
    }
    return found;
  };
  return async (delivery: Claimed): Promise<Outcome> => {
    try {
      const at = new Date();
      const signature = signer(delivery.webhook_id, delivery.secret_sealed).sign(
        delivery.event_id,
        at,
        delivery.body,
      );
      return await postWebhook(
        delivery.url,
        {
          'webhook-id': delivery.event_id,
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': signature,
        },
        delivery.body,
        limits,
      );
    } catch (error) {
      return { ok: false, status: null, excerpt: '', durationMs: 0, error: (error as Error).message };
    }
  };
}

function countAttempt(delivery: Claimed, outcome: Outcome): void {
  const kind: WebhookAttemptOutcome = outcome.ok
    ? 'delivered'
    : outcome.status === null
      ? 'no_answer'
      : 'http_error';
  webhookAttempts.inc({ outcome: kind });
  webhookAttemptDuration.observe({ outcome: kind }, outcome.durationMs / 1000);
  if (outcome.ok) webhookDeliveryLag.observe(Number(delivery.age) + outcome.durationMs / 1000);
}

/** The attempt's row, and the delivery's state after it (its lease released). */
function recordAttempt(db: Database, delivery: Claimed, outcome: Outcome, next: Date | null) {
  return db.transaction(async (tx) => {
    await tx.query(
      `INSERT INTO webhook_attempts (delivery_id, attempt, duration_ms, status, error, response_excerpt, next_attempt_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        delivery.id,
        delivery.attempts,
        outcome.durationMs,
        outcome.status,
        outcome.error ?? null,
        outcome.excerpt.slice(0, 500),
        next,
      ],
    );
    await tx.query(
      `UPDATE webhook_deliveries SET status = $2, lease_until = NULL, last_status = $3, last_error = $4,
         next_attempt_at = COALESCE($5, next_attempt_at), delivered_at = CASE WHEN $2 = 'delivered' THEN now() END
       WHERE id = $1`,
      [
        delivery.id,
        outcome.ok ? 'delivered' : next ? 'pending' : 'failed',
        outcome.status,
        outcome.ok ? null : (outcome.error ?? `answered ${outcome.status}`),
        next,
      ],
    );
  });
}
