import type { Database } from '../../db/database.js';
import type { LogLine } from '../../observability/logger.js';
import { claimDue, deliveryAttempts } from './attempt.js';
import { type DeliveryLimits, defaultDeliveryLimits } from './deliver.js';

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
  log: LogLine;
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
  const claim = () => claimDue(db, leaseSeconds);
  const attempt = deliveryAttempts({ db, secretsKey: options.secretsKey, schedule, limits, log });

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
        { event: 'webhook.leases_released', deliveries: rows.length },
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
        log(`webhook dispatch failed: ${(error as Error).message}`, { event: 'webhook.dispatch_failed' });
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
