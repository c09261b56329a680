import { createServer, type Server } from 'node:http';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The service's Prometheus metrics. They are recorded by every instance in this process into one
 * registry (the cost is a few additions per call) and served only when the operator asks for them
 * (`serveMetrics`, `serve --metrics-port N`). No label carries a run id, a partner id or anything a
 * partner sends: each label takes a handful of values fixed here.
 */
export const registry = new Registry();
/** Process metrics (memory, CPU, event loop, GC) are gathered from the first `serveMetrics` on. */
let processMetrics = false;

/** Seconds buckets around the stage's own delays (20 ms API, 100 ms token) and the group commit. */
const latencyBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** A stage call's kind: a token request, a partner API call, or anything else of the stage. */
export type StageKind = 'token' | 'api' | 'other';

export const stageRequests = new Counter({
  name: 'certification_stage_requests_total',
  help: 'Calls answered by the hosted stages of runs, by kind (token, api, other) and HTTP status code.',
  labelNames: ['kind', 'code'] as const,
  registers: [registry],
});

export const stageDuration = new Histogram({
  name: 'certification_stage_request_duration_seconds',
  help: "Time from a stage call's arrival to the end of its answer, the stage's configured delay included.",
  labelNames: ['kind'] as const,
  buckets: latencyBuckets,
  registers: [registry],
});

export const stageAddedLatency = new Histogram({
  name: 'certification_stage_added_latency_seconds',
  help: "What the service adds to a stage call: its duration less this instance's configured stage delay (token or API).",
  labelNames: ['kind'] as const,
  buckets: latencyBuckets,
  registers: [registry],
});

export const apiRequests = new Counter({
  name: 'certification_http_requests_total',
  help: 'Requests answered outside the stages (partner API, reviewer UI, JWKS, health), by area and HTTP status code.',
  labelNames: ['area', 'code'] as const,
  registers: [registry],
});

export const judgeDuration = new Histogram({
  name: 'certification_judge_duration_seconds',
  help: 'Time to judge, sign and store one run, by outcome (judged, interrupted; skipped when another instance judged it; failed).',
  labelNames: ['outcome'] as const,
  buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry],
});

export const dbBatchSize = new Histogram({
  name: 'certification_db_batch_size',
  help: 'Items carried by one grouped statement (numbering or recording calls), by batch.',
  labelNames: ['batch'] as const,
  buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
  registers: [registry],
});

export const dbBatchWait = new Histogram({
  name: 'certification_db_batch_wait_seconds',
  help: "Time an item waited in a batch's queue before its statement was sent (from the embedded store's journal file: since it was written there), by batch.",
  labelNames: ['batch'] as const,
  buckets: [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
  registers: [registry],
});

export const dbBatchDuration = new Histogram({
  name: 'certification_db_batch_duration_seconds',
  help: 'Time one grouped statement took, by batch and outcome.',
  labelNames: ['batch', 'outcome'] as const,
  buckets: latencyBuckets,
  registers: [registry],
});

export const signInFailures = new Counter({
  name: 'certification_signin_failures_total',
  help: 'Refused reviewer sign-ins, by reason.',
  labelNames: ['reason'] as const,
  registers: [registry],
});

/**
 * What a gauge read at each scrape queries: the database of the instances serving metrics. (Described
 * here rather than imported: observability sits below db/, which reports to it.)
 */
export interface MetricsDatabase {
  query<T extends object>(text: string, params?: readonly unknown[]): Promise<T[]>;
}

/** The databases the gauges read (those of the instances serving metrics): the first is read. */
const counted = new Set<MetricsDatabase>();

/**
 * Registers, once by its name, a gauge read from the database at each scrape. The part of the service
 * that owns the table registers it (runs/metrics.ts: the runs; production/index.ts: the webhook outbox),
 * so that observability never reads a table of theirs.
 */
export function databaseGauge<L extends string = never>(gauge: {
  name: string;
  help: string;
  labelNames?: readonly L[];
  read: (
    db: MetricsDatabase,
    set: (value: number, labels?: Partial<Record<L, string>>) => void,
  ) => Promise<void>;
}): void {
  if (registry.getSingleMetric(gauge.name)) return;
  new Gauge<L>({
    name: gauge.name,
    help: gauge.help,
    labelNames: gauge.labelNames ?? [],
    registers: [registry],
    async collect() {
      const [db] = counted;
      if (!db) return;
      await gauge.read(db, (value, labels) => (labels ? this.set(labels, value) : this.set(value)));
    },
  });
}

/** How a webhook delivery attempt ended: a 2xx, another answer (a 3xx included: never followed), or none. */
export type WebhookAttemptOutcome = 'delivered' | 'http_error' | 'no_answer';

export const webhookAttempts = new Counter({
  name: 'certification_webhook_attempts_total',
  help: 'Webhook delivery attempts, by outcome: delivered (a 2xx), http_error (any other answer, a redirect included), no_answer (no connection, a timeout, a reset).',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const webhookAttemptDuration = new Histogram({
  name: 'certification_webhook_attempt_duration_seconds',
  help: "Time one webhook delivery attempt took, from the request to the answer's end or the failure, by outcome.",
  labelNames: ['outcome'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20],
  registers: [registry],
});

export const webhookDeliveryLag = new Histogram({
  name: 'certification_webhook_delivery_lag_seconds',
  help: 'Time from an event entering the outbox to its delivery (a 2xx), retries included.',
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 21_600, 86_400],
  registers: [registry],
});

export const webhookDeliveriesFailed = new Counter({
  name: 'certification_webhook_deliveries_failed_total',
  help: 'Webhook deliveries that used their last retry without a 2xx (marked failed; a reviewer can send them again from the UI).',
  registers: [registry],
});

/** Sorts a stage call by its target below the run's prefix. */
export function stageKind(server: 'auth' | 'api', target: string): StageKind {
  if (server === 'api') return 'api';
  return target.split('?')[0] === '/oauth/token' ? 'token' : 'other';
}

/** Sorts a request outside the stages into a bounded area. */
export function areaOf(path: string): string {
  if (path.startsWith('/api/')) return 'api';
  if (path === '/healthz') return 'health';
  if (path === '/.well-known/jwks.json') return 'jwks';
  if (path === '/openapi.json') return 'openapi';
  return 'ui';
}

export interface MetricsServer {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` (Prometheus text format) on its own port, apart from partners' and reviewers'
 * traffic: by default on 127.0.0.1, for a Prometheus on the same host or a sidecar.
 */
export async function serveMetrics(options: {
  db: MetricsDatabase;
  host?: string;
  port: number;
}): Promise<MetricsServer> {
  counted.add(options.db);
  if (!processMetrics) {
    processMetrics = true;
    collectDefaultMetrics({ register: registry });
  }
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('only GET /metrics is served here\n');
      return;
    }
    registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'content-type': registry.contentType });
        res.end(text);
      },
      (error: unknown) => {
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(`collecting the metrics failed: ${(error as Error).message}\n`);
      },
    );
  });
  const host = options.host ?? '127.0.0.1';
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve((server.address() as { port: number }).port);
    });
  });
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        counted.delete(options.db);
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
