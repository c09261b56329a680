import { Counter } from 'prom-client';
import { registry } from '../observability/metrics.js';

/** Regressions recorded (each once), by the check that failed and what the service did about it. */
export const regressionsRecorded = new Counter({
  name: 'certification_regressions_total',
  help: "Regressions recorded: a decisive plan check failing on a partner's production evidence, by check and consequence (notified, suspended, or unchanged for a partner not active).",
  labelNames: ['check', 'consequence'] as const,
  registers: [registry],
});
