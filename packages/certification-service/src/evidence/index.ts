import type { Hono } from 'hono';
import type { Database } from '../db/types.js';
import type { LogLine } from '../observability/logger.js';
import { defaultEvidenceRetentionDays, evidenceRetentionSweeper } from './retention.js';
import { defaultEvidenceLimits, type EvidenceLimits, mountEvidence } from './routes.js';

export { claimExchanges, EvidenceLeaseLost, type PartnerEvidence } from './claim.js';
export type { Exchange } from './exchange.js';
export { addEvidenceReporter } from './reporters.js';
export { defaultEvidenceRetentionDays, purgeEvidence } from './retention.js';
export { defaultEvidenceLimits, type EvidenceLimits } from './routes.js';

/** Production evidence's settings (the `evidence` option of `startService`). */
export interface EvidenceOptions extends Partial<EvidenceLimits> {
  /** Days evidence is kept after it was received (`--evidence-retention-days`). Default 30. */
  retentionDays?: number;
  /** How often the retention sweep runs, in ms. Default an hour. */
  retentionSweepMs?: number;
}

/** Production evidence on one instance: `POST /evidence` and its retention sweep. */
export function startEvidence(deps: { db: Database; options?: EvidenceOptions; log: LogLine }) {
  const { retentionDays, retentionSweepMs, ...limits } = deps.options ?? {};
  const stopSweep = evidenceRetentionSweeper({
    db: deps.db,
    days: retentionDays ?? defaultEvidenceRetentionDays,
    ...(retentionSweepMs !== undefined && { everyMs: retentionSweepMs }),
    log: deps.log,
  });
  return {
    // biome-ignore lint/suspicious/noExplicitAny: mounted on the service's one app
    mount(app: Hono<any>) {
      mountEvidence(app, { db: deps.db, limits: { ...defaultEvidenceLimits, ...limits }, log: deps.log });
    },
    close: stopSweep,
  };
}
