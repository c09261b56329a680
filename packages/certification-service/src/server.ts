import { createServer, type Server } from 'node:http';
import { writeAudit } from './audit.js';
import type { Database } from './db/database.js';
import { migrate } from './db/migrations.js';
import { claimExchanges, type EvidenceOptions, startEvidence } from './evidence/index.js';
import { type Audit, mountApi } from './http/api.js';
import { answerUnrouted, serviceApp } from './http/app.js';
import { requestHandler } from './http/dispatch.js';
import {
  apiGate,
  defaultFairnessLimits,
  type FairnessLimits,
  partnerKeys,
  partnerLimiter,
} from './http/fairness.js';
import { mountHealth } from './http/health.js';
import { type Listening, listenOn } from './http/listen.js';
import { startWarmUp, type WarmUp, type WarmUpOptions, type WarmUpOutcome } from './http/warmup.js';
import { type JudgingOptions, type JudgingPool, judgingPool } from './judging/pool.js';
import { publishKey, type SigningKey } from './keys.js';
import type { Logger, LogLine } from './observability/logger.js';
import { type OidcOptions, oidcSignIn } from './oidc/oidc.js';
import type { DigestedPlan } from './plan/plan.js';
import {
  type Production,
  type ProductionOptions,
  registerProductionMetrics,
  startProduction,
} from './production/index.js';
import { replayJournal } from './recording/replay.js';
import { type Regressions, startRegressions } from './regressions/index.js';
import { purgedRunAnswers, retentionSweeper } from './retention/retention.js';
import { registerRunMetrics } from './runs/metrics.js';
import { createRuns, defaultRunLimits, type RunLimits, type Runs } from './runs/runs.js';
import { secretsKeyFrom } from './secrets.js';
import { defaultSigninLimits, type SigninLimits, signinGuard } from './signin/signin-guard.js';
import { mountUi } from './ui/routes.js';

export interface ServiceOptions {
  /** The database (see `openDatabase`); migrated on start. */
  db: Database;
  /** The key that signs attestations (see `loadSigningKey`). */
  signingKey: SigningKey;
  /**
   * The text that seals the secrets the service keeps and must use again (a run's stage key; at least
   * 32 random characters; AES-256-GCM under its HKDF). Default: derived from `signingKey`. Every
   * instance of one database needs the same.
   */
  secretsKey?: string;
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
  /**
   * Each partner's share of the API (requests in flight and per second, creations in flight), how long
   * an API key is remembered, and how long a refusal at the door is held before its 429 (`refusalHoldMs`,
   * at most `maxHeldRefusals` at once), so a client resending at once cannot flood. Default
   * `defaultFairnessLimits`.
   */
  fairness?: Partial<FairnessLimits>;
  /**
   * Where runs are judged: `threads` (cores − 1, 1 to 4; 0 judges on the HTTP thread), `timeoutMs`
   * (120000), `maxHeapMb` (2048) per thread, `maxQueued` (1000) runs waiting; `filename` replaces the
   * worker module (tests). Default `defaultJudgingOptions`.
   */
  judging?: Partial<JudgingOptions> & { filename?: string };
  /** Run stage keys (RSA-2048) generated ahead, one at a time. Default 2. */
  /**
   * Where the database has a journal (the embedded store's `DATA_DIR/journal`, or PostgreSQL opened with
   * a `journalDir`: one instance serves it): a call is answered once its exchange is written to the
   * journal file, which fills the database in the background and is replayed at start-up after a crash
   * (default true). false: each call waits for its own statement.
   */
  journalFile?: boolean;
  /**
   * Connections the kernel holds until this instance accepts them (default 4096, capped by the system's
   * net.core.somaxconn). Past it, new connections' SYNs are dropped and clients wait seconds to resend.
   */
  listenBacklog?: number;
  /**
   * Handles listening on the port (default 32; 1 turns this off): Node accepts one connection per
   * listening handle per turn of its event loop, so under load a burst of new connections is taken that
   * many times faster (with 4, 50 runs starting together left up to 248 connections waiting to be
   * accepted for seconds; with 32, the queue cleared within 1 s). Sockets bound through SO_REUSEPORT where the runtime has it (Node ≥ 22.12 and
   * 23.1, on Linux), else descriptors of the one socket (see `listenOn`); one, the reason logged, if
   * neither can be had.
   */
  listenSockets?: number;
  /**
   * At `close()` (SIGTERM), how long this instance keeps accepting and serving while `/readyz` already
   * answers 503 (`checks.accepting: "stopping"`), in ms, so that a load balancer checking it stops
   * sending new connections before the listening socket closes (default 0). A connection still waiting
   * to be accepted when the socket closes is reset by the kernel: behind a load balancer, set at least
   * its health-check interval times its unhealthy threshold.
   */
  shutdownDelayMs?: number;
  preparedStageKeys?: number;
  /** How many failed reviewer sign-ins, per client address and overall, before 429. Default `defaultSigninLimits`. */
  signinLimits?: Partial<SigninLimits>;
  /**
   * Take the client's address from the last `X-Forwarded-For` entry (behind a proxy that sets it, as the
   * operator guide's nginx does) instead of the socket's. Default false.
   */
  trustForwardedFor?: boolean;
  /** The certification plan every certification run follows (see `makePlan`). Default `defaultPlan`. */
  plan?: DigestedPlan;
  /** How often this instance judges idle and expired runs, in ms. Default 5000. */
  sweepIntervalMs?: number;
  /** Stage delays in ms (the CLI's defaults: 100 for token answers, 20 for API calls). */
  tokenDelayMs?: number;
  apiDelayMs?: number;
  /** Where lines of the service go (never a secret). Default `logger`, else stderr. */
  log?: LogLine;
  /** A structured logger (see `createLogger`): one JSON line per request and per event of the service. */
  logger?: Logger;
  /**
   * Days a run that no decision rests on keeps its session, reports, attestation and exchanges after it
   * ended (see `purgeExpired`); purged at start and hourly. Default: kept for ever.
   */
  retainDays?: number;
  /** The production flow: approval validity, expiry notices, the register's max-age, webhook retries. */
  production?: ProductionOptions;
  /** Reviewers sign in through this OpenID Connect provider instead of local credentials. Default: off. */
  oidc?: OidcOptions;
  /** Production evidence (`POST /evidence`): its bounds and retention (`--evidence-retention-days`, default 30). */
  evidence?: EvidenceOptions;
  /**
   * The start-up warm-up (see `startWarmUp`): a throwaway run's stage driven in this process, then
   * deleted, while `/readyz` answers 503 (`checks.warmUp: "warming up"`), so that the first partners'
   * calls do not pay for a fresh process. `deadlineMs` (30000): ready then whatever its state; `calls`
   * (1000). Default on; false turns it off (`--no-warm-up`).
   */
  warmUp?: boolean | WarmUpOptions;
  /**
   * Aborted while the instance starts (`serve` aborts it on a signal): the start-up warm-up stops at
   * once and deletes its throwaway run, and `startService` resolves; the caller then closes the
   * instance. Default: none.
   */
  signal?: AbortSignal;
}

export interface RunningService {
  readonly url: string;
  readonly publicUrl: string;
  readonly runs: Runs;
  readonly production: Production;
  /** Regressions on production evidence: `record` a finding under the service's policy. */
  readonly regressions: Regressions;
  readonly server: Server;
  /** Handles listening on the port (see `listenSockets`: 1 when neither way of having more worked). */
  readonly listeningSockets: number;
  /** How the start-up warm-up ended (done, failed, past its deadline or off): `startService` waited for it. */
  readonly warmedUp: Promise<WarmUpOutcome>;
  /** With `oidc`: reads the provider's discovery document (rejects, saying why, when it cannot). */
  readonly oidcReady?: () => Promise<void>;
  /** Stops taking requests, stops the sweeper, closes this instance's stages (the database stays open). */
  close(): Promise<void>;
}

/** At a stop, how long calls in flight may take to finish before their connections are closed. */
const inFlightGraceMs = 10_000;
/** Connections waiting to be accepted, by default (see `listenBacklog`). */
export const defaultListenBacklog = 4096;
/** Sockets listening on the service's port, by default (see `listenSockets`). */
export const defaultListenSockets = 32;

type Log = LogLine;

/**
 * Starts one instance of the certification service on an open database; resolves once it is ready: it
 * listens from before its start-up warm-up (`/readyz` 503 meanwhile), and resolves when that is done or
 * given up (see `startWarmUp`).
 */
/** The reviewer's pages: sign-in with its limits, OIDC when configured, the UI. Returns the OIDC sign-in. */
function mountReviewerPages(
  app: Parameters<typeof mountUi>[0],
  deps: Pick<Parameters<typeof mountUi>[1], 'db' | 'publicUrl' | 'audit' | 'production'> & { log: LogLine },
  options: ServiceOptions,
) {
  const { db, publicUrl, audit, production, log } = deps;
  const signin = signinGuard(
    db,
    { ...defaultSigninLimits, ...options.signinLimits },
    { trustForwardedFor: options.trustForwardedFor ?? false },
  );
  const oidc = options.oidc && oidcSignIn(options.oidc, { db, publicUrl, audit, log });
  mountUi(app, { db, publicUrl, audit, signin, production, ...(oidc && { oidc }) });
  return oidc;
}

export async function startService(options: ServiceOptions): Promise<RunningService> {
  const { db } = options;
  // The gauges read from the database at each scrape, registered by the parts that own their tables.
  registerRunMetrics();
  registerProductionMetrics();
  const log = serviceLog(options);
  const host = options.host ?? '127.0.0.1';
  await migrate(db);
  // What a previous process answered and had not yet committed (killed), before anything is served.
  if (db.journalDir !== undefined) await replayJournal(db, db.journalDir, log);
  await publishKey(db, options.signingKey);
  const { server, listening } = await openServer(options, host, log);
  const hostInUrl = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  const url = `http://${hostInUrl}:${listening.port}`;
  const publicUrl = (options.publicUrl ?? url).replace(/\/+$/, '');
  const secretsKey = secretsKeyFrom(options.secretsKey ?? options.signingKey.privateKey);
  const judging = judgingPool(options.judging);
  const runs = openRuns(options, { judging, publicUrl, secretsKey, log });
  const audit = auditLog(db);
  const app = serviceApp();
  const production = startProduction({
    db,
    key: options.signingKey,
    secretsKey,
    publicUrl,
    options: options.production ?? {},
    log,
  });
  /** Set at close(): `/readyz` answers 503 from then on. */
  let stopping = false;
  /** The start-up warm-up, started once everything is mounted: `/readyz` answers 503 until it lets go. */
  let warmUp: WarmUp | undefined;
  mountHealth(app, {
    db,
    signingKey: options.signingKey,
    log,
    stopping: () => stopping,
    warmUp: () => warmUp?.state() ?? 'warming up',
  });
  app.use('/api/runs/*', purgedRunAnswers(db));
  const { keys, gate } = apiDoor(db, options.fairness);
  mountApi(app, { db, runs, publicUrl, audit, keys, gate, standing: production.standing });
  production.mount(app);
  const evidence = startEvidence({ db, log, ...(options.evidence && { options: options.evidence }) });
  evidence.mount(app);
  const oidc = mountReviewerPages(app, { db, publicUrl, audit, production, log }, options);
  // Regressions: the evidence's new exchanges judged (each partner's once, on whichever instance claims
  // it) and recorded under --on-regression.
  const regressions = startRegressions({
    db,
    production,
    policy: production.settings.onRegression,
    log,
    evidence: { claim: () => claimExchanges(db) },
  });
  production.mountUi(app, { sections: [regressions.section] });
  regressions.mount(app);
  answerUnrouted(app, { publicUrl, log });
  const { logger, tokenDelayMs, apiDelayMs } = options;
  server.on('request', requestHandler({ app, db, runs, gate, log, logger, tokenDelayMs, apiDelayMs }));
  const sweeper = startSweeper(runs, production, options.sweepIntervalMs ?? 5000, log);
  // Ready (`/readyz`) once a throwaway run's stage has been driven and deleted: see startWarmUp.
  warmUp = startWarmUp(
    { db, runs, log, startedAt: sweeper.startedAt, signal: options.signal },
    options.warmUp === false ? false : options.warmUp === true ? {} : options.warmUp,
  );
  const { retainDays } = options;
  const stopRetention = retainDays === undefined ? undefined : retentionSweeper({ db, retainDays, log });
  let closing: Promise<void> | undefined;
  // Listening already (`/readyz` answers 503 "warming up", `/healthz` 200): resolves once ready.
  await warmUp.ready;
  return {
    url,
    publicUrl,
    runs,
    production,
    regressions,
    server,
    listeningSockets: listening.sockets,
    warmedUp: warmUp.ready,
    ...(oidc && { oidcReady: () => oidc.ready() }),
    close: () => {
      closing ??= (async () => {
        stopping = true;
        await warmUp.stop();
        sweeper.stop();
        await stopServing(server, listening, options.shutdownDelayMs);
        await sweeper.settled();
        await regressions.close();
        await production.close();
        await evidence.close();
        await stopRetention?.();
        await runs.close();
        await judging.close();
      })();
      return closing;
    },
  };
}

/** Where the service's lines go: `log`, else the structured `logger`, else stderr. */
function serviceLog(options: ServiceOptions): Log {
  const { logger } = options;
  return (
    options.log ??
    (logger
      ? (line: string, fields?: Record<string, unknown>) => logger.info(fields ?? {}, line)
      : (line: string) => process.stderr.write(`${line}\n`))
  );
}

/** The runs room of this instance (see `createRuns`), under the options' limits, plan and delays. */
function openRuns(
  options: ServiceOptions,
  deps: { judging: JudgingPool; publicUrl: string; secretsKey: Buffer; log: Log },
): Runs {
  return createRuns({
    db: options.db,
    judging: deps.judging,
    publicUrl: deps.publicUrl,
    key: options.signingKey,
    ...(options.preparedStageKeys !== undefined && { preparedStageKeys: options.preparedStageKeys }),
    ...(options.journalFile !== undefined && { journalFile: options.journalFile }),
    secretsKey: deps.secretsKey,
    limits: { ...defaultRunLimits, ...options.limits },
    ...(options.plan && { plan: options.plan }),
    ...(options.tokenDelayMs !== undefined && { tokenDelayMs: options.tokenDelayMs }),
    ...(options.apiDelayMs !== undefined && { apiDelayMs: options.apiDelayMs }),
    log: deps.log,
  });
}

/** The HTTP server, its timeouts set, listening on the options' port (see `listenOn`). */
async function openServer(options: ServiceOptions, host: string, log: Log) {
  const server = createServer();
  server.requestTimeout = 60_000;
  server.headersTimeout = 20_000;
  server.keepAliveTimeout = 5_000;
  // Connections waiting to be accepted: Node's default (511) overflows when many partners' programs
  // open connections at once while this thread is busy, and the kernel then drops their SYNs, which
  // clients resend 1, 3, 7 s later. The kernel caps it at net.core.somaxconn. Several sockets on the
  // port where the runtime allows it: see listenOn.
  const listening = await listenOn(server, {
    port: options.port ?? 8080,
    host,
    backlog: options.listenBacklog ?? defaultListenBacklog,
    sockets: options.listenSockets ?? defaultListenSockets,
    log,
  });
  return { server, listening };
}

/** Appends a line to the database's audit log. */
function auditLog(db: Database): Audit {
  return async (actor, action, subject, detail) => {
    await writeAudit(db, { actor, action, subject, detail });
  };
}

/** Which partner an API key is (remembered for `apiKeyCacheSeconds`), and the door of each one's share. */
function apiDoor(db: Database, limits: Partial<FairnessLimits> | undefined) {
  const fairness = { ...defaultFairnessLimits, ...limits };
  const keys = partnerKeys(
    async (keyHash) =>
      (await db.query<{ id: string }>('SELECT id FROM partners WHERE api_key_hash = $1', [keyHash]))[0]?.id,
    { ttlMs: fairness.apiKeyCacheSeconds * 1000 },
  );
  return { keys, gate: apiGate(keys, partnerLimiter(fairness)) };
}

/** Idle and overdue runs judged, then production's sweep, every `intervalMs`, one sweep at a time. */
function startSweeper(runs: Runs, production: Production, intervalMs: number, log: Log) {
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
  }, intervalMs);
  sweeper.unref();
  return {
    startedAt,
    stop: () => clearInterval(sweeper),
    /** The sweep under way, if any. */
    settled: () => sweeping,
  };
}

/**
 * After `shutdownDelayMs` (if any), stops accepting on every socket at once, closes idle connections,
 * and lets calls in flight finish: idle ones are closed as they finish, and whatever is still open
 * after `inFlightGraceMs` is cut.
 */
async function stopServing(server: Server, listening: Listening, shutdownDelayMs: number | undefined) {
  // Still serving, while /readyz says it stops, for the load balancer to take it out of its pool.
  if (shutdownDelayMs) await new Promise((resolve) => setTimeout(resolve, shutdownDelayMs));
  await listening.close();
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
    const idle = setInterval(() => server.closeIdleConnections(), 100);
    idle.unref();
    server.once('close', () => clearInterval(idle));
    setTimeout(() => {
      clearInterval(idle);
      server.closeAllConnections();
    }, inFlightGraceMs).unref();
  });
}
