import { Counter } from 'prom-client';
import { registry } from '../observability/metrics.js';

/** Why a log record of a batch was not stored (a metric label: these values only). */
export type RejectionReason =
  | 'missing_attribute'
  | 'invalid_attribute'
  | 'no_time'
  | 'token_like'
  | 'unknown_partner';

/** Production evidence's counters (`POST /evidence`), registered in the service's one registry. */
export const evidenceMetrics = {
  received: new Counter({
    name: 'certification_evidence_exchanges_received_total',
    help: 'Exchanges of production evidence stored (a retried batch counted once).',
    registers: [registry],
  }),
  rejected: new Counter({
    name: 'certification_evidence_records_rejected_total',
    help: 'Log records of production evidence not stored, by reason: missing_attribute, invalid_attribute, no_time, token_like (a token, an Authorization header or a JWT among the attributes), unknown_partner (also counted as dropped).',
    labelNames: ['reason'] as const,
    registers: [registry],
  }),
  deduplicated: new Counter({
    name: 'certification_evidence_batches_deduplicated_total',
    help: 'Batches of production evidence received again (same reporter and batch id): answered as the first time, nothing stored twice.',
    registers: [registry],
  }),
  dropped: new Counter({
    name: 'certification_evidence_records_dropped_total',
    help: 'Log records of production evidence about a partner this service does not know: counted and dropped.',
    registers: [registry],
  }),
  refused: new Counter({
    name: 'certification_evidence_batches_refused_total',
    help: 'Batches of production evidence refused whole, by HTTP status (400, 401, 413, 415, 429, 503).',
    labelNames: ['code'] as const,
    registers: [registry],
  }),
};
