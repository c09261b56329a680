import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { addPartner, addReviewer } from './admin.js';
import { type Database, openDatabase } from './db/database.js';
import { migrate } from './db/migrations.js';
import { ServiceError } from './errors.js';
import { loadSigningKey } from './keys.js';
import { createLogger } from './observability/logger.js';
import { type MetricsServer, serveMetrics } from './observability/metrics.js';
import { startTracing } from './observability/tracing.js';
import { checkOidcOptions, type OidcOptions, parseAllowRule } from './oidc/oidc.js';
import { parseEventList } from './outbox/events.js';
import { loadPlanFile } from './plan/plan.js';
import { addRegisterReader } from './production/register/register.js';
import { addWebhook } from './production/webhooks/admin.js';
import type { RunLimits } from './runs/runs.js';
import { secretsKeyFrom } from './secrets.js';
import { startService } from './server.js';
import { tool } from './version.js';

const usage = `Usage:
  partner-certification-service serve [--host H] [--port N] [--public-url URL] [--data-dir DIR] [--plan FILE] [--trust-forwarded-for]
  partner-certification-service admin add-partner --name NAME [--json] [--data-dir DIR]
  partner-certification-service admin add-reviewer --name NAME [--json] [--data-dir DIR]
  partner-certification-service admin add-register-reader --name NAME [--json] [--data-dir DIR]
  partner-certification-service admin add-webhook --url URL [--events E,…] [--json] [--data-dir DIR]

serve
  --host H           interface to listen on (default 127.0.0.1; 0.0.0.0 behind a proxy or in a container)
  --port N           port (default 8080; 0 for a random one)
  --public-url URL   the URL partners and reviewers use, e.g. https://certify.example.com behind a TLS proxy
                     (default http://HOST:PORT); run addresses and report links are made from it
  --data-dir DIR     the embedded database and a generated signing key (default ./certification-data)
  --journal-dir DIR  with PostgreSQL (DATABASE_URL): this instance serves the database alone, and answers a
                     call once it is written to a journal file in DIR, filled into the database in the
                     background and replayed at the next start after a crash; put DIR on a disk that
                     outlives the process. Start refused while other instances serve the database, and
                     theirs while this one does (default: none; instances share the database, and each call
                     waits for PostgreSQL's commit). The embedded database always keeps one in DATA_DIR/journal
  --idle-timeout S   a run that receives nothing for S seconds is judged (default 600)
  --max-run-duration S  a run is judged at the latest S seconds after it was created (default 3600)
  --max-open-runs N  open runs per partner at once (default 5)
  --max-runs-per-hour N  runs a partner may create per hour (default 60)
  --approval-valid-days N  an approval for production is valid N days (default 365)
  --expiry-notice-days N   an approval expiring within N days is announced (approval.expiring) (default 30)
  --register-max-age S     the register's Cache-Control max-age, seconds (default 60)
  --webhook-retry-schedule S,…  seconds before each retry of a failed webhook delivery, e.g. 5,15,15,15
                     (1 to 30 delays of 1 to 604800 s, each varied ±20 %; after the last the delivery is failed)
                     (default 5,30,120,600,1800,3600,10800,21600,43200,86400,86400,86400: about 4 days)
  --trust-forwarded-for  a reviewer's sign-in address is the last X-Forwarded-For entry (behind a proxy that
                     sets it), not the socket's; failed sign-ins are limited per address (default off)
  --retain-days N    purge the sessions, reports, attestations and exchanges of runs ended N days ago that
                     no decision rests on (their digests stay in the audit log) (default: keep everything)
  --shutdown-delay S  on SIGTERM, keep accepting and serving S seconds while /readyz answers 503, so a load
                     balancer takes the instance out of its pool before it stops listening; behind one, at
                     least its health-check interval times its unhealthy threshold (0 to 300; default 0)
  --metrics-port N   serve GET /metrics (Prometheus text format) on this port (default: no metrics served)
  --metrics-host H   the interface of the metrics port (default 127.0.0.1)
  --log-format F     json: one JSON line per event on stdout; text: lines for a person on stderr
                     (default: text when stdout is a terminal, json otherwise)
  --plan FILE        the certification plan every certification run ("certify": true) follows, as JSON:
                     {"id", "operations"?, "scopes"?, "scenarios"?, "ttlSeconds"?, "longTtlSeconds"?, "renewal"?,
                     "decisiveShouldChecks"?}; absent fields take the default plan's (partner-lending-default-v1:
                     the four operations and scopes, every scenario, ttl 5 s, long ttl 3600 s, a renewal,
                     client-token-reuse and client-retry-after deciding like musts)
  --oidc-issuer URL  reviewers sign in through this OpenID Connect provider instead of local credentials
                     (default: local credentials from admin add-reviewer); redirect URI PUBLIC_URL/signin/oidc/callback
  --oidc-client-id ID  the client registered at the provider (needed with --oidc-issuer)
  --oidc-client-secret-file FILE  the client's secret (or the environment variable OIDC_CLIENT_SECRET)
  --oidc-allow CLAIM=VALUE  who may sign in: groups=cert-reviewers, roles=…, realm_access.roles=…, or
                     email_domain=vendor.example (a verified email); repeat for "any of" (at least one needed)

admin (the same storage options as serve)
  add-partner        prints the partner id and its API key, once (only a hash is stored)
  add-reviewer       prints a reviewer id and the reviewer's sign-in credential, once (reusable until
                     replaced; only a hash is stored)
  add-register-reader  prints a reader id and a key for GET /register, once (only a hash is stored)
  add-webhook        prints a webhook id and its signing secret ("whsec_…"), once (stored sealed
                     with the secrets key: SECRETS_KEY_FILE, else the attestation key)
                     add-partner and add-reviewer print which store they wrote to (on stderr): set
                     DATABASE_URL in this shell too when serve uses PostgreSQL, or the same --data-dir
  --name NAME        the partner's, reviewer's or register reader's name
  --url URL          the webhook endpoint (http or https; no redirect is followed)
  --events E,…       the event types to send (default all): partner.approved, partner.rejected,
                     partner.revoked, approval.expiring, approval.expired, run.judged
  --json             print one line of JSON: {"partnerId","apiKey"}, {"reviewerId","credential"},
                     {"readerId","key"} or {"webhookId","secret"}

Environment
  DATABASE_URL       postgres://USER:PASSWORD@HOST:PORT/DB: PostgreSQL instead of the embedded database
  SIGNING_KEY_FILE   the attestation key (private JWK or PEM, Ed25519 or ES256); generated into --data-dir when unset
  OIDC_CLIENT_SECRET the OIDC client secret when --oidc-client-secret-file is not given
  SECRETS_KEY_FILE   a file of at least 32 random characters that seals the secrets the service keeps (a run's
                     stage key); derived from the attestation key when unset
  OTEL_EXPORTER_OTLP_ENDPOINT  export traces over OTLP/HTTP (JSON) to this collector (default: no traces);
                     the other standard OTEL_* variables apply (OTEL_SERVICE_NAME, OTEL_EXPORTER_OTLP_HEADERS…)

  --help             this text      --version   the version`;

function fail(message: string, code = 2): never {
  process.stderr.write(`partner-certification-service: ${message}\n`);
  process.exit(code);
}

async function main(argv: string[]): Promise<void> {
  let parsed: ReturnType<typeof parse>;
  const parse = () =>
    parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        host: { type: 'string' },
        port: { type: 'string' },
        'public-url': { type: 'string' },
        'data-dir': { type: 'string' },
        'journal-dir': { type: 'string' },
        'idle-timeout': { type: 'string' },
        'max-run-duration': { type: 'string' },
        'max-open-runs': { type: 'string' },
        'max-runs-per-hour': { type: 'string' },
        'approval-valid-days': { type: 'string' },
        'expiry-notice-days': { type: 'string' },
        'register-max-age': { type: 'string' },
        'webhook-retry-schedule': { type: 'string' },
        'trust-forwarded-for': { type: 'boolean' },
        plan: { type: 'string' },
        'metrics-port': { type: 'string' },
        'retain-days': { type: 'string' },
        'shutdown-delay': { type: 'string' },
        'metrics-host': { type: 'string' },
        'log-format': { type: 'string' },
        'oidc-issuer': { type: 'string' },
        'oidc-client-id': { type: 'string' },
        'oidc-client-secret-file': { type: 'string' },
        'oidc-allow': { type: 'string', multiple: true },
        name: { type: 'string' },
        url: { type: 'string' },
        events: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean' },
      },
    });
  if (argv.some((arg) => /^--oidc-client-secret(=|$)/.test(arg)))
    fail(
      'the OIDC client secret is not taken on the command line (other users can read it there): put it in a file and pass --oidc-client-secret-file FILE, or set OIDC_CLIENT_SECRET',
    );
  try {
    parsed = parse();
  } catch (error) {
    fail(`${(error as Error).message.split('\n')[0]}\n${usage}`);
  }
  const { values, positionals } = parsed;
  if (values.help) return void process.stdout.write(`${usage}\n`);
  if (values.version) return void process.stdout.write(`${tool.version}\n`);
  const [command, sub, ...rest] = positionals;
  const dataDir = values['data-dir'] ?? 'certification-data';
  const databaseUrl = process.env.DATABASE_URL || undefined;
  if (command === 'admin') {
    const subs = ['add-partner', 'add-reviewer', 'add-register-reader', 'add-webhook'];
    if (!sub || !subs.includes(sub) || rest.length > 0)
      fail(
        `admin takes ${subs.join(', ')}${sub ? `, not ${JSON.stringify(sub.slice(0, 40))}` : ''}\n${usage}`,
      );
    for (const flag of [
      'host',
      'port',
      'public-url',
      'idle-timeout',
      'max-run-duration',
      'max-open-runs',
      'max-runs-per-hour',
      'approval-valid-days',
      'expiry-notice-days',
      'register-max-age',
      'webhook-retry-schedule',
      'trust-forwarded-for',
      'plan',
      'metrics-port',
      'metrics-host',
      'retain-days',
      'shutdown-delay',
      'log-format',
      'oidc-issuer',
      'oidc-client-id',
      'oidc-client-secret-file',
      'oidc-allow',
      'journal-dir',
    ] as const)
      if (values[flag] !== undefined) fail(`--${flag} is an option of serve, not of admin`);
    if (sub === 'add-webhook') {
      if (values.name !== undefined) fail('admin add-webhook takes --url URL [--events E,…], not --name');
      if (values.url === undefined) fail('admin add-webhook needs --url URL');
    } else {
      if (values.url !== undefined || values.events !== undefined)
        fail(`--url and --events are options of admin add-webhook, not of admin ${sub}`);
      if (values.name === undefined) fail(`admin ${sub} needs --name NAME`);
    }
    const db = await openStorage(databaseUrl, dataDir);
    const store = storeName(db);
    try {
      if (sub === 'add-webhook') {
        let events: ReturnType<typeof parseEventList>;
        try {
          events = parseEventList(values.events);
        } catch (error) {
          fail((error as Error).message);
        }
        const key = await loadSigningKey({
          file: process.env.SIGNING_KEY_FILE || undefined,
          dataDir: await ensureDir(dataDir),
          warn: (line) => process.stderr.write(`partner-certification-service: warning: ${line}\n`),
        });
        await migrate(db);
        const secretsText = readSecretsKey(process.env.SECRETS_KEY_FILE || undefined);
        const { webhookId, secret } = await addWebhook(db, secretsKeyFrom(secretsText ?? key.privateKey), {
          url: values.url!,
          events,
        });
        process.stdout.write(
          values.json
            ? `${JSON.stringify({ webhookId, secret })}\n`
            : `webhook ${webhookId} added for ${events.join(', ')}.\nSigning secret (shown once; stored sealed with the secrets key): ${secret}\n`,
        );
      } else if (sub === 'add-register-reader') {
        const name = values.name!.trim();
        // biome-ignore lint/suspicious/noControlCharactersInRegex: a name with control characters is refused
        if (name.length === 0 || name.length > 100 || /[\u0000-\u001f\u007f]/.test(name))
          fail('--name takes 1 to 100 printable characters, e.g. --name "production token endpoint"');
        await migrate(db);
        const { readerId, key } = await addRegisterReader(db, name);
        process.stdout.write(
          values.json
            ? `${JSON.stringify({ readerId, key })}\n`
            : `register reader ${readerId} added.\nRegister key (shown once; only its hash is stored): ${key}\n`,
        );
      } else if (sub === 'add-partner') {
        const { partnerId, apiKey } = await addPartner(db, values.name!);
        process.stdout.write(
          values.json
            ? `${JSON.stringify({ partnerId, apiKey })}\n`
            : `partner ${partnerId} added.\nAPI key (shown once; only its hash is stored): ${apiKey}\n`,
        );
        process.stderr.write(`partner-certification-service: wrote partner ${partnerId} to ${store}\n`);
      } else {
        const { reviewerId, credential } = await addReviewer(db, values.name!);
        process.stdout.write(
          values.json
            ? `${JSON.stringify({ reviewerId, credential })}\n`
            : `reviewer ${reviewerId} added.\nSign-in credential (shown once, reusable until replaced; only its hash is stored): ${credential}\n`,
        );
        process.stderr.write(`partner-certification-service: wrote reviewer ${reviewerId} to ${store}\n`);
      }
    } catch (error) {
      if (error instanceof TypeError) fail(error.message);
      throw error;
    } finally {
      await db.close();
    }
    return;
  }
  if (command !== 'serve' || sub !== undefined)
    fail(
      `${command ? `unknown command ${JSON.stringify(command.slice(0, 40))}` : 'a command is needed'}\n${usage}`,
    );
  for (const flag of ['name', 'json', 'url', 'events'] as const)
    if (values[flag] !== undefined) fail(`--${flag} is an option of admin, not of serve`);
  const port = values.port === undefined ? 8080 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    fail(`--port takes 0 to 65535, got ${JSON.stringify(values.port)}`);
  const publicUrl = values['public-url'];
  if (publicUrl !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(publicUrl);
    } catch {}
    if (
      !url ||
      !/^https?:$/.test(url.protocol) ||
      url.pathname !== '/' ||
      url.search ||
      url.hash ||
      url.username
    )
      fail(
        `--public-url takes an http(s) origin such as https://certify.example.com (no path), got ${JSON.stringify(publicUrl.slice(0, 100))}`,
      );
  }
  const limits: Partial<RunLimits> = {};
  const whole = (flag: string, value: string | undefined, min: number, max: number) => {
    if (value === undefined) return undefined;
    const number = Number(value);
    if (!/^\d+$/.test(value) || number < min || number > max)
      fail(`--${flag} takes a whole number from ${min} to ${max}, got ${JSON.stringify(value.slice(0, 40))}`);
    return number;
  };
  const idle = whole('idle-timeout', values['idle-timeout'], 1, 86_400);
  if (idle !== undefined) limits.idleSeconds = idle;
  const duration = whole('max-run-duration', values['max-run-duration'], 1, 7 * 86_400);
  if (duration !== undefined) limits.maxDurationSeconds = duration;
  const open = whole('max-open-runs', values['max-open-runs'], 1, 10_000);
  if (open !== undefined) limits.maxOpenRunsPerPartner = open;
  const hourly = whole('max-runs-per-hour', values['max-runs-per-hour'], 1, 1_000_000);
  if (hourly !== undefined) limits.maxRunsPerHour = hourly;
  const plan = values.plan === undefined ? undefined : loadPlanFile(values.plan);
  const production = {
    approvalValidDays: whole('approval-valid-days', values['approval-valid-days'], 1, 3_650),
    expiryNoticeDays: whole('expiry-notice-days', values['expiry-notice-days'], 0, 3_650),
    registerMaxAgeSeconds: whole('register-max-age', values['register-max-age'], 0, 86_400),
    webhookRetrySchedule: retrySchedule(values['webhook-retry-schedule']),
  };
  function retrySchedule(value: string | undefined): number[] | undefined {
    if (value === undefined) return undefined;
    const delays = value.split(',').map((part) => part.trim());
    if (
      delays.length < 1 ||
      delays.length > 30 ||
      delays.some((delay) => !/^\d+$/.test(delay) || Number(delay) < 1 || Number(delay) > 604_800)
    )
      fail(
        `--webhook-retry-schedule takes 1 to 30 comma-separated delays in seconds, each from 1 to 604800 (e.g. 5,30,120), got ${JSON.stringify(value.slice(0, 80))}`,
      );
    return delays.map(Number);
  }
  const retainDays = whole('retain-days', values['retain-days'], 1, 36_500);
  const shutdownDelay = whole('shutdown-delay', values['shutdown-delay'], 0, 300);
  const metricsPort = whole('metrics-port', values['metrics-port'], 0, 65_535);
  if (values['metrics-host'] !== undefined && metricsPort === undefined)
    fail('--metrics-host needs --metrics-port N');
  const logFormat = values['log-format'] ?? (process.stdout.isTTY ? 'text' : 'json');
  if (logFormat !== 'json' && logFormat !== 'text')
    fail(`--log-format takes json or text, got ${JSON.stringify(logFormat.slice(0, 40))}`);
  const oidc = await oidcOptions(values);
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
    ...(shutdownDelay !== undefined && { shutdownDelayMs: shutdownDelay * 1000 }),
    ...(oidc && { oidc }),
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
  // Before the start-up line: a supervisor may signal as soon as it reads it.
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

async function oidcOptions(values: {
  'oidc-issuer'?: string | undefined;
  'oidc-client-id'?: string | undefined;
  'oidc-client-secret-file'?: string | undefined;
  'oidc-allow'?: string[] | undefined;
}): Promise<OidcOptions | undefined> {
  const issuer = values['oidc-issuer'];
  if (issuer === undefined) {
    for (const flag of ['oidc-client-id', 'oidc-client-secret-file', 'oidc-allow'] as const)
      if (values[flag] !== undefined) fail(`--${flag} needs --oidc-issuer URL`);
    return undefined;
  }
  const clientId = values['oidc-client-id'];
  if (clientId === undefined)
    fail('--oidc-issuer needs --oidc-client-id ID (the client registered at the provider)');
  const file = values['oidc-client-secret-file'];
  let clientSecret = process.env.OIDC_CLIENT_SECRET ?? '';
  if (file !== undefined) {
    const { readFileSync } = await import('node:fs');
    try {
      clientSecret = readFileSync(file, 'utf8').trim();
    } catch (error) {
      fail(
        `cannot read --oidc-client-secret-file ${JSON.stringify(file)}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      );
    }
  }
  if (clientSecret === '')
    fail(
      '--oidc-issuer needs the client secret: --oidc-client-secret-file FILE, or the environment variable OIDC_CLIENT_SECRET',
    );
  let allow: OidcOptions['allow'];
  try {
    allow = (values['oidc-allow'] ?? []).map(parseAllowRule);
    const options = { issuer, clientId, clientSecret, allow };
    checkOidcOptions(options);
    return options;
  } catch (error) {
    fail((error as Error).message);
  }
}

async function ensureDir(dir: string): Promise<string> {
  const { mkdirSync } = await import('node:fs');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

const storeName = (db: Database) =>
  db.kind === 'embedded'
    ? `embedded PGlite in ${db.where}`
    : `PostgreSQL at ${db.where}${db.journalDir !== undefined ? `, served by this instance alone (journal in ${db.journalDir})` : ''}`;

async function openStorage(databaseUrl: string | undefined, dataDir: string): Promise<Database> {
  return openDatabase({ databaseUrl, dataDir });
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof ServiceError) fail(error.message, error.code === 'ERR_STORAGE_IN_USE' ? 3 : 2);
  fail(`unexpected error: ${(error as Error).stack ?? String(error)}`, 1);
});

/** The text of SECRETS_KEY_FILE (at least 32 characters once trimmed), or undefined when it is not set. */
function readSecretsKey(file: string | undefined): string | undefined {
  if (!file) return undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (error) {
    fail(
      `SECRETS_KEY_FILE ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}): give the path of a file holding at least 32 random characters (e.g. openssl rand -base64 32 > FILE).`,
    );
  }
  if (text.length < 32)
    fail(
      `SECRETS_KEY_FILE ${file} holds ${text.length} characters, expected at least 32 random ones (e.g. openssl rand -base64 32 > FILE).`,
    );
  return text;
}
