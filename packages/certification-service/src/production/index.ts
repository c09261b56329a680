import type { Hono } from 'hono';
import type { Database } from '../db/database.js';
import type { SigningKey } from '../keys.js';
import type { LogLine } from '../observability/logger.js';
import { databaseGauge } from '../observability/metrics.js';
import { type DecisionRequest, decide } from './decide.js';
import { sweepApprovals } from './decisions/signed.js';
import { mountProductionUi, type PartnerSection } from './pages.js';
import { type ChangeOptions, createRegisterChanges } from './register/changes.js';
import { createRegister, registerEntries } from './register/register.js';
import { mountRegister } from './register/routes.js';
import type { DeliveryLimits } from './webhooks/deliver.js';
import { createDispatcher } from './webhooks/dispatcher.js';

/** The production flow's settings (the `serve` options of the same names). */
export interface ProductionOptions {
  /** How long an approval is valid, in days (`--approval-valid-days`). Default 365. */
  approvalValidDays?: number;
  /** How many days before its end an approval is announced as expiring (`--expiry-notice-days`). Default 30. */
  expiryNoticeDays?: number;
  /** The register's `Cache-Control: max-age`, in seconds (`--register-max-age`). Default 60. */
  registerMaxAgeSeconds?: number;
  /** Delays between webhook attempts, in seconds. Default `retryScheduleSeconds`. */
  webhookRetrySchedule?: readonly number[];
  /** Bounds of one webhook attempt. Default `defaultDeliveryLimits`. */
  webhookLimits?: DeliveryLimits;
  /** How often the outbox is polled, in ms. Default 1000. */
  webhookPollMs?: number;
  /** The register's change notice (`GET /register/changes`): hold, poll interval, waiter bounds. */
  registerChanges?: ChangeOptions;
  /**
   * What a regression on production evidence does (`--on-regression`): `notify` announces it
   * (`partner.regressed`); `suspend` also suspends an active partner until a reviewer approves a run
   * again. Default `notify`.
   */
  onRegression?: 'notify' | 'suspend';
}

export const defaultProductionOptions = {
  approvalValidDays: 365,
  expiryNoticeDays: 30,
  registerMaxAgeSeconds: 60,
  onRegression: 'notify',
} as const;

/**
 * The production flow of one instance: the register, the webhook dispatcher, the expiry sweep, the UI
 * pages, and `decide` (approve, reject, revoke), which every reviewer's decision goes through.
 */
export function startProduction(deps: {
  db: Database;
  key: SigningKey;
  /** The key that seals the webhooks' signing secrets (`secretsKeyFrom`). */
  secretsKey: Buffer;
  publicUrl: string;
  options: ProductionOptions;
  log: LogLine;
}) {
  const settings = { ...defaultProductionOptions, ...deps.options };
  const register = createRegister({
    db: deps.db,
    key: deps.key,
    issuer: deps.publicUrl,
    maxAgeSeconds: settings.registerMaxAgeSeconds,
  });
  const changes = createRegisterChanges({
    db: deps.db,
    register,
    ...(settings.registerChanges && { options: settings.registerChanges }),
    log: deps.log,
  });
  const dispatcher = createDispatcher({
    db: deps.db,
    secretsKey: deps.secretsKey,
    log: deps.log,
    soleInstance: deps.db.exclusive,
    ...(settings.webhookRetrySchedule && { schedule: settings.webhookRetrySchedule }),
    ...(settings.webhookLimits && { limits: settings.webhookLimits }),
    ...(settings.webhookPollMs !== undefined && { pollMs: settings.webhookPollMs }),
  });
  /** When a new approval ends. */
  const validUntil = (from = new Date()) =>
    new Date(from.getTime() + settings.approvalValidDays * 86_400_000);
  /** A decision committed here: the webhooks leave, and the gates holding a change poll hear of it. */
  const nudge = () => {
    dispatcher.nudge();
    changes.nudge();
  };
  const decideHere = (request: DecisionRequest) =>
    decide({ db: deps.db, key: deps.key, validUntil: () => validUntil(), nudge }, request);
  return {
    settings,
    register,
    changes,
    dispatcher,
    /** The key every decision is signed with (the attestation key). */
    key: deps.key,
    validUntil,
    /** Approves or rejects a run, or revokes an approval: the production rule (see decide.ts). */
    decide: decideHere,
    /** Something production reads was committed (a regression, a suspension): webhooks and change polls hear of it. */
    nudge,
    // biome-ignore lint/suspicious/noExplicitAny: mounted on the service's one app
    mount(app: Hono<any>) {
      mountRegister(app, { db: deps.db, register, changes });
    },
    // biome-ignore lint/suspicious/noExplicitAny: mounted on the service's one app, after the UI's sign-in
    mountUi(app: Hono<any>, extra: { sections?: ReadonlyArray<PartnerSection> } = {}) {
      mountProductionUi(app, {
        db: deps.db,
        decide: decideHere,
        noticeDays: settings.expiryNoticeDays,
        nudge: dispatcher.nudge,
        ...(extra.sections && { sections: extra.sections }),
      });
    },
    /**
     * A partner's production standing as the partner sees it (GET /api/decisions): its register entry,
     * and `expiring` when an active approval ends within `--expiry-notice-days`; null when absent.
     */
    async standing(partnerId: string) {
      const [entry] = await registerEntries(deps.db, new Date(), partnerId);
      if (!entry) return null;
      const { name: _name, ...rest } = entry;
      return {
        ...rest,
        expiring:
          entry.status === 'active' &&
          entry.validUntil !== null &&
          Date.parse(entry.validUntil) - Date.now() < settings.expiryNoticeDays * 86_400_000,
      };
    },
    /** Records due expiries and expiry notices; run by every instance with the run sweep. */
    async sweep() {
      const swept = await sweepApprovals(deps.db, { key: deps.key, noticeDays: settings.expiryNoticeDays });
      if (swept.expired + swept.noticed > 0) nudge();
      return swept;
    },
    close: async () => {
      await changes.close();
      await dispatcher.close();
    },
  };
}

export type Production = ReturnType<typeof startProduction>;

/**
 * Registers the webhook outbox's gauges (once), read at each scrape: deliveries by status
 * (`certification_webhook_outbox`) and the age of the oldest pending one.
 */
export function registerProductionMetrics(): void {
  databaseGauge({
    name: 'certification_webhook_outbox',
    help: 'Webhook deliveries in the outbox by status: pending (not yet delivered, retries left) and failed (retries used up), read at each scrape.',
    labelNames: ['status'],
    async read(db, set) {
      const rows = await db.query<{ status: string; count: string }>(
        "SELECT status, count(*) AS count FROM webhook_deliveries WHERE status IN ('pending', 'failed') GROUP BY status",
      );
      for (const status of ['pending', 'failed'] as const)
        set(Number(rows.find((row) => row.status === status)?.count ?? 0), { status });
    },
  });
  databaseGauge({
    name: 'certification_webhook_oldest_pending_seconds',
    help: 'Age of the oldest pending webhook delivery (0 when none is pending), read at each scrape: alert on it for a receiver down.',
    async read(db, set) {
      const [row] = await db.query<{ age: string | null }>(
        "SELECT EXTRACT(EPOCH FROM now() - min(created_at)) AS age FROM webhook_deliveries WHERE status = 'pending'",
      );
      set(Math.max(0, Number(row?.age ?? 0)));
    },
  });
}
