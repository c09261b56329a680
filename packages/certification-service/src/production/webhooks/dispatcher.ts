import { Webhook } from 'standardwebhooks';
import type { Database } from '../../db/database.js';
import {
  type WebhookAttemptOutcome,
  webhookAttemptDuration,
  webhookAttempts,
  webhookDeliveriesFailed,
  webhookDeliveryLag,
} from '../../observability/metrics.js';
import { type DeliveryLimits, defaultDeliveryLimits, postWebhook } from './deliver.js';
import { openSecret } from './seal.js';

/**
 * When a failed delivery is tried again: the delay before attempt n+1 after attempt n failed, in seconds
 * (each varied by ±20 % jitter so that receivers coming back are not hit all at once). 13 attempts over
 * about 3 days 23 hours; after the last, the delivery is `failed` and can be sent again from the UI.
 */
export const retryScheduleSeconds: readonly number[] = [
  5, 30, 120, 600, 1_800, 3_600, 10_800, 21_600, 43_200, 86_400, 86_400, 86_400,
];

export interface DispatcherOptions {
  db: Database;
  /** The secrets key (`secretsKeyFrom`), which opens the sealed webhook secrets. */
  secretsKey: Buffer;
  /** Delays between attempts, seconds (default retryScheduleSeconds). */
  schedule?: readonly number[];
  limits?: DeliveryLimits;
  /** How often the outbox is polled when nothing nudges the dispatcher (default 1000 ms). */
  pollMs?: number;
  /** How long a claimed delivery is kept from other instances while it is attempted (default 60 s). */
  leaseSeconds?: number;
  /**
   * This dispatcher is the store's only one (the embedded store belongs to one process): the leases a
   * killed process left are released at the start, so its deliveries are tried again at once rather
   * than after their lease (default false: on PostgreSQL another instance may hold them).
   */
  soleInstance?: boolean;
  log: (line: string) => void;
}

interface Claimed {
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

/**
 * Sends the outbox: any instance claims due deliveries (FOR UPDATE SKIP LOCKED, then a lease, so two
 * instances never attempt one delivery at once and a killed instance's claim lapses), only the oldest
 * pending delivery of each partner for each webhook (so events arrive in order per partner), POSTs each
 * signed per Standard Webhooks, and records every attempt.
 */
export function createDispatcher(options: DispatcherOptions) {
  const { db, log } = options;
  const schedule = options.schedule ?? retryScheduleSeconds;
  const limits = options.limits ?? defaultDeliveryLimits;
  const leaseSeconds = options.leaseSeconds ?? 60;
  const signers = new Map<string, Webhook>();
  const signer = (webhookId: string, sealed: string) => {
    let found = signers.get(sealed);
    if (!found) {
      found = new Webhook(openSecret(options.secretsKey, webhookId, sealed));
      signers.set(sealed, found);
    }
    return found;
  };

  const claim = () =>
    db.transaction((tx) =>
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

  const attempt = async (delivery: Claimed) => {
    let outcome: Awaited<ReturnType<typeof postWebhook>>;
    try {
      const at = new Date();
      const signature = signer(delivery.webhook_id, delivery.secret_sealed).sign(
        delivery.event_id,
        at,
        delivery.body,
      );
      outcome = await postWebhook(
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
      outcome = { ok: false, status: null, excerpt: '', durationMs: 0, error: (error as Error).message };
    }
    const kind: WebhookAttemptOutcome = outcome.ok
      ? 'delivered'
      : outcome.status === null
        ? 'no_answer'
        : 'http_error';
    webhookAttempts.inc({ outcome: kind });
    webhookAttemptDuration.observe({ outcome: kind }, outcome.durationMs / 1000);
    if (outcome.ok) webhookDeliveryLag.observe(Number(delivery.age) + outcome.durationMs / 1000);
    const delay = schedule[delivery.attempts - 1];
    const next =
      outcome.ok || delay === undefined
        ? null
        : new Date(Date.now() + delay * 1000 * (0.8 + Math.random() * 0.4));
    await db.transaction(async (tx) => {
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
    if (!outcome.ok && !next) webhookDeliveriesFailed.inc();
    if (!outcome.ok)
      log(
        `webhook ${delivery.webhook_id}: delivery ${delivery.event_id} attempt ${delivery.attempts} failed (${outcome.error ?? `answered ${outcome.status}`}); ${next ? `next try at ${next.toISOString()}` : 'no try left: resend it from the UI'}`,
      );
  };

  // A process killed between a claim and its record left a lease nobody will release: with no other
  // instance possible, the delivery's attempt is known to have ended with that process.
  // (Done before the first claim; a failed release is tried again at the next tick.)
  let leasesReleased = !options.soleInstance;
  const releaseLeases = async () => {
    const rows = await db.query<{ id: string }>(
      `UPDATE webhook_deliveries SET lease_until = NULL
       WHERE status = 'pending' AND lease_until IS NOT NULL RETURNING id`,
    );
    leasesReleased = true;
    if (rows.length > 0)
      log(
        `webhooks: ${rows.length} deliver${rows.length === 1 ? 'y' : 'ies'} claimed by a process that stopped before recording the attempt: tried again now`,
      );
  };

  /** Claims and attempts what is due until nothing is; returns the number of attempts made. */
  const drain = async (): Promise<number> => {
    if (!leasesReleased) await releaseLeases();
    let total = 0;
    for (let round = 0; round < 100; round += 1) {
      const claimed = await claim();
      if (claimed.length === 0) break;
      await Promise.all(claimed.map(attempt));
      total += claimed.length;
    }
    return total;
  };

  let running: Promise<number> | undefined;
  let again = false;
  let closed = false;
  const tick = (): Promise<number> => {
    if (running) {
      again = true;
      return running;
    }
    running = drain()
      .catch((error: unknown) => {
        log(`webhook dispatch failed: ${(error as Error).message}`);
        return 0;
      })
      .finally(() => {
        running = undefined;
        if (again && !closed) {
          again = false;
          void tick();
        }
      });
    return running;
  };
  const timer = setInterval(() => void tick(), options.pollMs ?? 1000);
  timer.unref();
  return {
    /** Attempts what is due now (a decision calls it after its commit). */
    nudge: () => void tick(),
    tick,
    async close() {
      closed = true;
      clearInterval(timer);
      await running;
    },
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
