import type { Database } from '../db/database.js';
import type { Logger } from '../observability/logger.js';
import type { MetricsServer } from '../observability/metrics.js';
import type { Tracing } from '../observability/tracing.js';
import type { RunningService } from '../server.js';

/** The signals that stop the service. */
const stopSignals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * While the service starts (its start-up warm-up runs before `stopOnSignals` is set): the first SIGINT,
 * SIGTERM or SIGHUP aborts `signal` (the warm-up ends and deletes its throwaway run, and `startService`
 * resolves) instead of ending the process half-way. `release()` removes these handlers and says which
 * signal came, if one did: the caller then stops as `stopOnSignals` does.
 */
export function signalsWhileStarting(): { signal: AbortSignal; release(): NodeJS.Signals | undefined } {
  const controller = new AbortController();
  let received: NodeJS.Signals | undefined;
  const handlers = stopSignals.map((name) => {
    const handler = () => {
      received ??= name;
      controller.abort();
    };
    process.on(name, handler);
    return [name, handler] as const;
  });
  return {
    signal: controller.signal,
    release() {
      for (const [name, handler] of handlers) process.off(name, handler);
      return received;
    },
  };
}

/**
 * On SIGINT, SIGTERM or SIGHUP: says so, closes the service, the metrics, the traces and the database,
 * and exits 0 (a second signal changes nothing). Set before the start-up line: a supervisor may signal as
 * soon as it reads it. Returns the stop itself, for a signal that came before it was set (see
 * `signalsWhileStarting`).
 */
export function stopOnSignals(parts: {
  service: RunningService;
  metrics: MetricsServer | undefined;
  tracing: Tracing | undefined;
  db: Database;
  logger: Logger | undefined;
}): (signal: NodeJS.Signals) => void {
  const { service, metrics, tracing, db, logger } = parts;
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
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
  for (const signal of stopSignals) process.on(signal, () => stop(signal));
  return stop;
}
