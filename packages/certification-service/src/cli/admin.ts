import { addPartner, addReviewer } from '../admin.js';
import type { Database } from '../db/database.js';
import { migrate } from '../db/migrations.js';
import { UsageError } from '../errors.js';
import { addEvidenceReporter } from '../evidence/index.js';
import { loadSigningKey } from '../keys.js';
import { parseEventList } from '../outbox/events.js';
import { addRegisterReader } from '../production/register/register.js';
import { addWebhook } from '../production/webhooks/admin.js';
import { secretsKeyFrom } from '../secrets.js';
import type { Values } from './arguments.js';
import { ensureDir, openStorage, readSecretsKey, storeName } from './storage.js';
import { fail, usage } from './usage.js';

const subcommands = [
  'add-partner',
  'add-reviewer',
  'add-register-reader',
  'add-evidence-reporter',
  'add-webhook',
];

/** `admin SUB`: adds a partner, a reviewer, a register reader or a webhook, and prints its secret once. */
export async function admin(
  sub: string | undefined,
  rest: readonly string[],
  values: Values,
  dataDir: string,
  databaseUrl: string | undefined,
): Promise<void> {
  if (!sub || !subcommands.includes(sub) || rest.length > 0)
    fail(
      `admin takes ${subcommands.join(', ')}${sub ? `, not ${JSON.stringify(sub.slice(0, 40))}` : ''}\n${usage}`,
    );
  checkAdminFlags(sub, values);
  const db = await openStorage(databaseUrl, dataDir);
  try {
    if (sub === 'add-webhook') await addWebhookCommand(db, values, dataDir);
    else if (sub === 'add-register-reader') await addReaderCommand(db, values);
    else if (sub === 'add-evidence-reporter') await addReporterCommand(db, values);
    else if (sub === 'add-partner') await addPartnerCommand(db, values);
    else await addReviewerCommand(db, values);
  } catch (error) {
    if (error instanceof UsageError) fail(error.message);
    throw error;
  } finally {
    await db.close();
  }
}

/** Refuses the flags of serve, and those of another subcommand. */
function checkAdminFlags(sub: string, values: Values): void {
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
    'evidence-retention-days',
    'on-regression',
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
}

async function addWebhookCommand(db: Database, values: Values, dataDir: string): Promise<void> {
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
  process.stderr.write(`partner-certification-service: wrote webhook ${webhookId} to ${storeName(db)}\n`);
}

async function addReaderCommand(db: Database, values: Values): Promise<void> {
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
  process.stderr.write(
    `partner-certification-service: wrote register reader ${readerId} to ${storeName(db)}\n`,
  );
}

async function addReporterCommand(db: Database, values: Values): Promise<void> {
  await migrate(db);
  const { reporterId, key } = await addEvidenceReporter(db, values.name!);
  process.stdout.write(
    values.json
      ? `${JSON.stringify({ reporterId, key })}\n`
      : `evidence reporter ${reporterId} added.\nEvidence key (shown once; only its hash is stored): ${key}\n`,
  );
  process.stderr.write(
    `partner-certification-service: wrote evidence reporter ${reporterId} to ${storeName(db)}\n`,
  );
}

async function addPartnerCommand(db: Database, values: Values): Promise<void> {
  const store = storeName(db);
  const { partnerId, apiKey } = await addPartner(db, values.name!);
  process.stdout.write(
    values.json
      ? `${JSON.stringify({ partnerId, apiKey })}\n`
      : `partner ${partnerId} added.\nAPI key (shown once; only its hash is stored): ${apiKey}\n`,
  );
  process.stderr.write(`partner-certification-service: wrote partner ${partnerId} to ${store}\n`);
}

async function addReviewerCommand(db: Database, values: Values): Promise<void> {
  const store = storeName(db);
  const { reviewerId, credential } = await addReviewer(db, values.name!);
  process.stdout.write(
    values.json
      ? `${JSON.stringify({ reviewerId, credential })}\n`
      : `reviewer ${reviewerId} added.\nSign-in credential (shown once, reusable until replaced; only its hash is stored): ${credential}\n`,
  );
  process.stderr.write(`partner-certification-service: wrote reviewer ${reviewerId} to ${store}\n`);
}
