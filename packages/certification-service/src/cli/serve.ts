import type { Database } from '../db/database.js';
import { openDatabase } from '../db/database.js';
import { loadSigningKey, type SigningKey } from '../keys.js';
import { createLogger, type Logger } from '../observability/logger.js';
import { type MetricsServer, serveMetrics } from '../observability/metrics.js';
import { startTracing, type Tracing } from '../observability/tracing.js';
import { type RunningService, startService } from '../server.js';
import { tool } from '../version.js';
import type { Values } from './arguments.js';
import { type ServeOptions, serveOptions } from './serve-options.js';
import { signalsWhileStarting, stopOnSignals } from './signals.js';
import { ensureDir, readSecretsKey, storeName } from './storage.js';
import { fail } from './usage.js';

/** `serve`: one instance of the service, until a signal stops it. */
export async function serve(values: Values, dataDir: string, databaseUrl: string | undefined): Promise<void> {
  const options = await serveOptions(values);
  const { logFormat, metricsPort } = options;
  const logger = logFormat === 'json' ? createLogger() : undefined;
  const tracing = await startTracing().catch((error: unknown) => fail((error as Error).message));
  const journalDir = values['journal-dir'];
  if (journalDir !== undefined && !databaseUrl)
    fail(
      '--journal-dir is for PostgreSQL (set DATABASE_URL); the embedded database keeps its journal in DATA_DIR/journal',
    );
  if (journalDir === '') fail('--journal-dir needs a directory');
  const db = await openDatabase({ databaseUrl, dataDir, journalDir, serving: true });
  const key = await loadSigningKey({
    file: process.env.SIGNING_KEY_FILE || undefined,
    dataDir: databaseUrl && !values['data-dir'] ? await ensureDir(dataDir) : await ensureDir(dataDir),
    warn: (line) =>
      logger
        ? logger.warn({ event: 'signing-key.generated' }, line)
        : process.stderr.write(`partner-certification-service: warning: ${line}\n`),
  }).catch(async (error: unknown) => {
    await db.close();
    throw error;
  });
  // A signal during the start-up warm-up stops it (its run deleted), then the instance, as below.
  const starting = signalsWhileStarting();
  const service = await startInstance(values, options, { db, key, logger, signal: starting.signal });
  const early = starting.release();
  if (early) {
    stopOnSignals({ service, metrics: undefined, tracing, db, logger })(early);
    return;
  }
  let metrics: MetricsServer | undefined;
  if (metricsPort !== undefined)
    metrics = await serveMetrics({
      db,
      port: metricsPort,
      ...(values['metrics-host'] && { host: values['metrics-host'] }),
    }).catch(async (error: unknown) => {
      await service.close();
      await db.close();
      fail(
        (error as NodeJS.ErrnoException).code === 'EADDRINUSE'
          ? `metrics port ${metricsPort} is in use: choose another with --metrics-port`
          : `cannot serve the metrics: ${(error as Error).message}`,
      );
    });
  stopOnSignals({ service, metrics, tracing, db, logger });
  startupLine({ values, db, key, service, metrics, tracing, logger });
}

/** Starts the service on the database opened (closed again when it cannot start). */
async function startInstance(
  values: Values,
  options: ServeOptions,
  {
    db,
    key,
    logger,
    signal,
  }: { db: Database; key: SigningKey; logger: Logger | undefined; signal: AbortSignal },
): Promise<RunningService> {
  const {
    port,
    limits,
    plan,
    production,
    publicUrl,
    retainDays,
    evidenceRetentionDays,
    shutdownDelay,
    oidc,
    warmUp,
  } = options;
  const secretsKey = readSecretsKey(process.env.SECRETS_KEY_FILE || undefined);
  const service = await startService({
    db,
    signingKey: key,
    ...(secretsKey && { secretsKey }),
    ...(values['trust-forwarded-for'] && { trustForwardedFor: true }),
    host: values.host ?? '127.0.0.1',
    port,
    limits,
    ...(plan && { plan }),
    production: Object.fromEntries(Object.entries(production).filter(([, value]) => value !== undefined)),
    ...(publicUrl && { publicUrl }),
    ...(logger && { logger }),
    ...(retainDays !== undefined && { retainDays }),
    ...(evidenceRetentionDays !== undefined && { evidence: { retentionDays: evidenceRetentionDays } }),
    ...(shutdownDelay !== undefined && { shutdownDelayMs: shutdownDelay * 1000 }),
    ...(oidc && { oidc }),
    warmUp,
    signal,
  }).catch(async (error: unknown) => {
    await db.close();
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE')
      fail(`port ${port} is in use: choose another with --port`);
    throw error;
  });
  if (oidc)
    await service.oidcReady?.().catch(async (error: unknown) => {
      await service.close();
      await db.close();
      fail((error as Error).message);
    });
  return service;
}

/** Where the service listens, its storage, key and plan: a line for a person, or a JSON event. */
function startupLine(parts: {
  values: Values;
  db: Database;
  key: SigningKey;
  service: RunningService;
  metrics: MetricsServer | undefined;
  tracing: Tracing | undefined;
  logger: Logger | undefined;
}): void {
  const { values, db, key, service, metrics, tracing, logger } = parts;
  const storage = `${storeName(db)}; attestation key ${key.kid} from ${key.source}`;
  const human =
    `partner-certification-service ${tool.version} listening on ${service.url} (public URL ${service.publicUrl})\n` +
    `storage: ${storage}${metrics ? `; metrics at ${metrics.url}` : ''}${tracing ? '; traces exported over OTLP' : ''}\n` +
    `certification plan ${service.runs.plan.id} (sha256 ${service.runs.plan.digest})${values.plan ? ` from ${values.plan}` : ''}\n`;
  if (logger) {
    logger.info(
      {
        event: 'service.started',
        url: service.url,
        publicUrl: service.publicUrl,
        storage: db.kind,
        ...(db.kind === 'postgres' && db.journalDir !== undefined && { journalDir: db.journalDir }),
        kid: key.kid,
        plan: { id: service.runs.plan.id, digest: service.runs.plan.digest },
        ...(metrics && { metricsUrl: metrics.url }),
        tracing: tracing !== undefined,
      },
      human.split('\n')[0]!,
    );
    // The person who started it in a terminal still reads where it listens.
    if (process.stderr.isTTY) process.stderr.write(human);
  } else process.stderr.write(human);
}
