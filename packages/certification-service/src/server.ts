import { createServer, type Server } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import type { Database } from './db/database.js';
import { migrate } from './db/migrations.js';
import { type Audit, mountApi } from './http/api.js';
import { problem } from './http/problem.js';
import { publishKey, type SigningKey } from './keys.js';
import { type Production, type ProductionOptions, startProduction } from './register/production.js';
import { createRuns, defaultRunLimits, type RunLimits, type Runs } from './runs/runs.js';
import { mountUi } from './ui/routes.js';

export interface ServiceOptions {
  /** The database (see `openDatabase`); migrated on start. */
  db: Database;
  /** The key that signs attestations (see `loadSigningKey`). */
  signingKey: SigningKey;
  /** Interface to listen on. Default 127.0.0.1. */
  host?: string;
  /** Port. Default 8080; 0 for a random one. */
  port?: number;
  /**
   * The URL partners and reviewers reach the service by (scheme, host, port; a path is not supported),
   * e.g. https://certify.example.com behind a TLS proxy. Default http://HOST:PORT.
   */
  publicUrl?: string;
  /** Run limits (idle time, duration, exchanges, rate limits). Default `defaultRunLimits`. */
  limits?: Partial<RunLimits>;
  /** How often this instance judges idle and expired runs, in ms. Default 5000. */
  sweepIntervalMs?: number;
  /** Stage delays in ms (the CLI's defaults: 100 for token answers, 20 for API calls). */
  tokenDelayMs?: number;
  apiDelayMs?: number;
  /** Where lines of the service go (never a secret). Default stderr. */
  log?: (line: string) => void;
  /** The production flow: approval validity, expiry notices, the register's max-age, webhook retries. */
  production?: ProductionOptions;
}

export interface RunningService {
  readonly url: string;
  readonly publicUrl: string;
  readonly runs: Runs;
  readonly production: Production;
  readonly server: Server;
  /** Stops taking requests, stops the sweeper, closes this instance's stages (the database stays open). */
  close(): Promise<void>;
}

const stagePath = /^\/runs\/([A-Za-z0-9_-]{1,64})\/(auth|api)(\/.*)?$/s;

/** Starts one instance of the certification service on an open database. */
export async function startService(options: ServiceOptions): Promise<RunningService> {
  const { db } = options;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const host = options.host ?? '127.0.0.1';
  await migrate(db);
  await publishKey(db, options.signingKey);
  const server = createServer();
  server.requestTimeout = 60_000;
  server.headersTimeout = 20_000;
  server.keepAliveTimeout = 5_000;
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8080, host, () => {
      server.off('error', reject);
      resolve((server.address() as { port: number }).port);
    });
  });
  const hostInUrl = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  const url = `http://${hostInUrl}:${port}`;
  const publicUrl = (options.publicUrl ?? url).replace(/\/+$/, '');
  const runs = createRuns({
    db,
    publicUrl,
    key: options.signingKey,
    limits: { ...defaultRunLimits, ...options.limits },
    ...(options.tokenDelayMs !== undefined && { tokenDelayMs: options.tokenDelayMs }),
    ...(options.apiDelayMs !== undefined && { apiDelayMs: options.apiDelayMs }),
    log,
  });
  const audit: Audit = async (actor, action, subject, detail) => {
    await db.query('INSERT INTO audit_log (actor, action, subject, detail) VALUES ($1, $2, $3, $4)', [
      actor,
      action,
      subject,
      JSON.stringify(detail),
    ]);
  };
  // biome-ignore lint/suspicious/noExplicitAny: both mounts add their own variables to one app
  const app = new Hono<any>();
  app.use('*', async (c, next) => {
    await next();
    c.res.headers.set('x-content-type-options', 'nosniff');
    if (!c.res.headers.has('content-security-policy'))
      c.res.headers.set('content-security-policy', "default-src 'none'; frame-ancestors 'none'");
  });
  const production = startProduction({
    db,
    key: options.signingKey,
    publicUrl,
    record: recordDecisionPending,
    options: options.production ?? {},
    log,
  });
  mountApi(app, { db, runs, publicUrl, audit });
  production.mount(app);
  mountUi(app, { db, publicUrl, audit });
  production.mountUi(app);
  app.notFound((c) =>
    problem(c, 404, 'Not found', `nothing at ${c.req.method} ${new URL(c.req.url).pathname.slice(0, 200)}`),
  );
  app.onError((error, c) => {
    log(`error on ${c.req.method} ${new URL(c.req.url).pathname.slice(0, 200)}: ${error.message}`);
    return problem(c, 500, 'Internal error', 'the service failed to answer; the error is in its log');
  });
  const listener = getRequestListener(app.fetch);
  server.on('request', (req, res) => {
    const match = stagePath.exec((req.url ?? '/').split('?')[0]!);
    if (match) {
      const query = (req.url ?? '').includes('?') ? (req.url ?? '').slice((req.url ?? '').indexOf('?')) : '';
      runs
        .serveStage(match[1]!, match[2] as 'auth' | 'api', req, res, `${match[3] ?? '/'}${query}`)
        .catch((error: unknown) => {
          log(`stage error on run ${match[1]}: ${(error as Error).message}`);
          if (!res.headersSent)
            res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
          if (!res.writableEnded)
            res.end(
              JSON.stringify({
                error: 'temporarily_unavailable',
                error_description: 'the certification service could not serve this call; retry',
              }),
            );
        });
      return;
    }
    void listener(req, res);
  });
  const startedAt = Date.now();
  let sweeping: Promise<void> | undefined;
  const sweeper = setInterval(() => {
    sweeping ??= runs
      .sweep(startedAt)
      .then(async () => void (await production.sweep()))
      .catch((error: unknown) => log(`sweep failed: ${(error as Error).message}`))
      .finally(() => {
        sweeping = undefined;
      });
  }, options.sweepIntervalMs ?? 5000);
  sweeper.unref();
  let closing: Promise<void> | undefined;
  return {
    url,
    publicUrl,
    runs,
    production,
    server,
    close: () => {
      closing ??= (async () => {
        clearInterval(sweeper);
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
          setTimeout(() => server.closeAllConnections(), 2000).unref();
        });
        await sweeping;
        await production.close();
        await runs.close();
      })();
      return closing;
    },
  };
}

// Until recordDecision (src/decisions/decisions.ts) lands, signed decisions cannot be recorded.
const recordDecisionPending = async (): Promise<never> => {
  throw new Error('recordDecision is not available yet');
};
