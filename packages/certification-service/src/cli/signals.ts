import type { Database } from '../db/database.js';
import type { Logger } from '../observability/logger.js';
import type { MetricsServer } from '../observability/metrics.js';
import type { Tracing } from '../observability/tracing.js';
import type { RunningService } from '../server.js';

/**
 * On SIGINT, SIGTERM or SIGHUP: says so, closes the service, the metrics, the traces and the database,
 * and exits 0 (a second signal changes nothing). Set before the start-up line: a supervisor may signal as
 * soon as it reads it.
 */
export function stopOnSignals(parts: {
  service: RunningService;
  metrics: MetricsServer | undefined;
  tracing: Tracing | undefined;
  db: Database;
  logger: Logger | undefined;
}): void {
  const { service, metrics, tracing, db, logger } = parts;
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    const line = `partner-certification-service: ${signal}: stopping (open runs continue on the next start)`;
    if (logger) logger.info({ event: 'service.stopping', signal }, line);
    else process.stderr.write(`${line}\n`);
    void service
      .close()
      .then(() => metrics?.close())
      .then(() => tracing?.shutdown().catch(() => {}))
      .then(() => db.close())
      .then(() => process.exit(0));
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => stop(signal));
}
