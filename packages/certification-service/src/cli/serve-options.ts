import { readFileSync } from 'node:fs';
import { checkOidcOptions, type OidcOptions, parseAllowRule } from '../oidc/oidc.js';
import { type DigestedPlan, loadPlanFile } from '../plan/plan.js';
import type { RunLimits } from '../runs/runs.js';
import type { Values } from './arguments.js';
import { fail } from './usage.js';

/** What `serve`'s flags ask for, checked: a usage error ends the command naming the flag. */
export interface ServeOptions {
  port: number;
  publicUrl: string | undefined;
  limits: Partial<RunLimits>;
  plan: DigestedPlan | undefined;
  production: {
    approvalValidDays: number | undefined;
    expiryNoticeDays: number | undefined;
    registerMaxAgeSeconds: number | undefined;
    webhookRetrySchedule: number[] | undefined;
    onRegression: 'notify' | 'suspend' | undefined;
  };
  retainDays: number | undefined;
  evidenceRetentionDays: number | undefined;
  shutdownDelay: number | undefined;
  metricsPort: number | undefined;
  logFormat: 'json' | 'text';
  oidc: OidcOptions | undefined;
  /** --no-warm-up: ready at once, without the start-up warm-up. */
  warmUp: boolean;
}

/** A whole number flag from `min` to `max`; undefined when absent. */
const whole = (flag: string, value: string | undefined, min: number, max: number) => {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!/^\d+$/.test(value) || number < min || number > max)
    fail(`--${flag} takes a whole number from ${min} to ${max}, got ${JSON.stringify(value.slice(0, 40))}`);
  return number;
};

/** `serve`'s flags, checked. */
export async function serveOptions(values: Values): Promise<ServeOptions> {
  for (const flag of ['name', 'json', 'url', 'events'] as const)
    if (values[flag] !== undefined) fail(`--${flag} is an option of admin, not of serve`);
  const port = values.port === undefined ? 8080 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    fail(`--port takes 0 to 65535, got ${JSON.stringify(values.port)}`);
  const publicUrl = checkPublicUrl(values['public-url']);
  const limits = runLimits(values);
  const plan = values.plan === undefined ? undefined : loadPlanFile(values.plan);
  const production = {
    approvalValidDays: whole('approval-valid-days', values['approval-valid-days'], 1, 3_650),
    expiryNoticeDays: whole('expiry-notice-days', values['expiry-notice-days'], 0, 3_650),
    registerMaxAgeSeconds: whole('register-max-age', values['register-max-age'], 0, 86_400),
    webhookRetrySchedule: retrySchedule(values['webhook-retry-schedule']),
    onRegression: onRegression(values['on-regression']),
  };
  const retainDays = whole('retain-days', values['retain-days'], 1, 36_500);
  const evidenceRetentionDays = whole(
    'evidence-retention-days',
    values['evidence-retention-days'],
    1,
    36_500,
  );
  const shutdownDelay = whole('shutdown-delay', values['shutdown-delay'], 0, 300);
  const metricsPort = whole('metrics-port', values['metrics-port'], 0, 65_535);
  if (values['metrics-host'] !== undefined && metricsPort === undefined)
    fail('--metrics-host needs --metrics-port N');
  const logFormat = values['log-format'] ?? (process.stdout.isTTY ? 'text' : 'json');
  if (logFormat !== 'json' && logFormat !== 'text')
    fail(`--log-format takes json or text, got ${JSON.stringify(logFormat.slice(0, 40))}`);
  const oidc = await oidcOptions(values);
  return {
    port,
    publicUrl,
    limits,
    plan,
    production,
    retainDays,
    evidenceRetentionDays,
    shutdownDelay,
    metricsPort,
    logFormat,
    oidc,
    warmUp: values['no-warm-up'] !== true,
  };
}

/** --public-url: an http(s) origin, no path. */
function checkPublicUrl(publicUrl: string | undefined): string | undefined {
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
  return publicUrl;
}

/** The runs' limits the flags set. */
function runLimits(values: Values): Partial<RunLimits> {
  const limits: Partial<RunLimits> = {};
  const idle = whole('idle-timeout', values['idle-timeout'], 1, 86_400);
  if (idle !== undefined) limits.idleSeconds = idle;
  const duration = whole('max-run-duration', values['max-run-duration'], 1, 7 * 86_400);
  if (duration !== undefined) limits.maxDurationSeconds = duration;
  const open = whole('max-open-runs', values['max-open-runs'], 1, 10_000);
  if (open !== undefined) limits.maxOpenRunsPerPartner = open;
  const hourly = whole('max-runs-per-hour', values['max-runs-per-hour'], 1, 1_000_000);
  if (hourly !== undefined) limits.maxRunsPerHour = hourly;
  return limits;
}

/** --on-regression: notify or suspend. */
function onRegression(value: string | undefined): 'notify' | 'suspend' | undefined {
  if (value === undefined || value === 'notify' || value === 'suspend') return value;
  return fail(
    `--on-regression takes notify (announce a regression) or suspend (also suspend an active partner until a reviewer approves a run again), got ${JSON.stringify(value.slice(0, 40))}`,
  );
}

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
