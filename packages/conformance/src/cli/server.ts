import { exitCodeFor } from '../common/report.js';
import { parseScopeList } from '../common/scope-set.js';
import { ConformanceError, usageError } from '../errors.js';
import { ConsoleReporter } from '../reporters/console.js';
import { formatHtmlReport } from '../reporters/html/server.js';
import { formatJsonReport } from '../reporters/json.js';
import { formatJunitReport } from '../reporters/junit.js';
import { checkIds } from '../server/checks/index.js';
import type { ConformanceOptions } from '../server/run.js';
import { type ConformanceRun, runConformanceDetailed, stoppedRun } from '../server/run.js';
import { tool } from '../version.js';
import { type CliIo, parseFlags, reportPath, writeReports } from './io.js';

export const usageText = `Usage: partner-conformance [--target mock]
       partner-conformance --auth-url URL --base-url URL [--audience URL]
           [--expect-scopes "read:loans create:loan_draft"] [--allow-writes]
           [--other-partner-id ID] [--other-audience AUD] [--listen HOST] [--certify]
           [--max-expiry-wait SECONDS] [--only ID,...] [--skip ID,...]
           [--report-json FILE] [--report-junit FILE] [--report-html FILE]

       partner-conformance client [options] -- COMMAND [ARGS…]   (certify your integration: client --help)
       partner-conformance verify ATTESTATION --keys URL|FILE [--session FILE]   (check a signed result: verify --help)

With no target flags the embedded mock is started and tested.
Credentials: PARTNER_CLIENT_ID and PARTNER_CLIENT_SECRET (never flags); a second partner's client for
partner-isolation: PARTNER_OTHER_CLIENT_ID and PARTNER_OTHER_CLIENT_SECRET.
Also read: PARTNER_AUTH_URL, PARTNER_BASE_URL, PARTNER_AUDIENCE (flags win; --target mock ignores them).
Exit: 0 no must check failed (skipped allowed, except with --certify), 1 a must check failed (or, with
--certify, was not verified), 2 usage or configuration error, 3 target unreachable.
`;

export interface CliConfig {
  options: ConformanceOptions;
  reports: { json?: string; junit?: string; html?: string };
  help: boolean;
  version: boolean;
}

const flags = {
  target: { type: 'string' },
  'auth-url': { type: 'string' },
  'base-url': { type: 'string' },
  audience: { type: 'string' },
  'expect-scopes': { type: 'string' },
  'allow-writes': { type: 'boolean' },
  'other-partner-id': { type: 'string' },
  'other-audience': { type: 'string' },
  listen: { type: 'string' },
  certify: { type: 'boolean' },
  'max-expiry-wait': { type: 'string' },
  only: { type: 'string' },
  skip: { type: 'string' },
  'report-json': { type: 'string' },
  'report-junit': { type: 'string' },
  'report-html': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const;

const idList = (value: string | undefined) =>
  value === undefined
    ? undefined
    : value
        .split(',')
        .map((id) => id.trim())
        .filter((id) => id.length > 0);

/**
 * Refuses a URL with credentials in it (https://user:pass@host): they would travel to the target and
 * land in reports. The message never repeats the URL, so a password in it is not echoed.
 */
export function refuseUserinfo(flag: string, value: string | undefined): void {
  if (value === undefined) return;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return; // not a URL: the later check says so (a value without '@…:' is safe to show)
  }
  if (url.username !== '' || url.password !== '')
    throw usageError(
      `${flag} contains credentials (user:password@); give the address without them (https://host/...) and the client credentials in PARTNER_CLIENT_ID / PARTNER_CLIENT_SECRET`,
    );
}

type Values = ReturnType<typeof parseFlags<typeof flags>>['values'];
type Env = Record<string, string | undefined>;

/** An environment variable, when set and not empty. */
const nonEmpty = (value: string | undefined) => (value === undefined || value === '' ? undefined : value);

/** Reads argv and the environment into options; throws ConformanceError ERR_USAGE with a one-line message. */
export function parseCliArgs(argv: readonly string[], env: Env): CliConfig {
  const { values } = parseFlags(argv, flags, 'partner-conformance', false);
  const config: CliConfig = {
    options: {},
    reports: {},
    help: values.help === true,
    version: values.version === true,
  };
  if (config.help || config.version) return config;
  const options = config.options;
  targetFlags(options, values, env);
  runFlags(options, values);
  otherPartnerFlags(options, values, env);
  listenFlag(options, values);
  expiryWaitFlag(options, values);
  checkIdFlags(options, values);
  config.reports = reportFlags(values);
  return config;
}

/**
 * `--target mock`, or `--auth-url`, `--base-url`, `--audience` (flags win over PARTNER_AUTH_URL,
 * PARTNER_BASE_URL, PARTNER_AUDIENCE) with the client's credentials, from the environment only.
 */
function targetFlags(options: ConformanceOptions, values: Values, env: Env): void {
  if (values.target !== undefined && values.target !== 'mock')
    throw usageError(
      `--target accepts only "mock" (the embedded mock); to test a service give --auth-url and --base-url`,
    );
  const explicitMock = values.target === 'mock';
  if (explicitMock && (values['auth-url'] !== undefined || values['base-url'] !== undefined))
    throw usageError('--target mock cannot be combined with --auth-url or --base-url');
  const authUrl = values['auth-url'] ?? (explicitMock ? undefined : nonEmpty(env.PARTNER_AUTH_URL));
  const baseUrl = values['base-url'] ?? (explicitMock ? undefined : nonEmpty(env.PARTNER_BASE_URL));
  const audience = values.audience ?? nonEmpty(env.PARTNER_AUDIENCE);
  refuseUserinfo('--auth-url', authUrl);
  refuseUserinfo('--base-url', baseUrl);
  refuseUserinfo('--audience', audience);
  if (authUrl === undefined && baseUrl === undefined) {
    if (values.audience !== undefined) options.audience = values.audience;
    return;
  }
  if (authUrl === undefined) throw usageError('--base-url needs --auth-url (or PARTNER_AUTH_URL) too');
  if (baseUrl === undefined) throw usageError('--auth-url needs --base-url (or PARTNER_BASE_URL) too');
  options.authUrl = authUrl;
  options.baseUrl = baseUrl;
  if (audience !== undefined) options.audience = audience;
  const clientId = nonEmpty(env.PARTNER_CLIENT_ID);
  const clientSecret = nonEmpty(env.PARTNER_CLIENT_SECRET);
  const missing = [clientId ? '' : 'PARTNER_CLIENT_ID', clientSecret ? '' : 'PARTNER_CLIENT_SECRET'].filter(
    Boolean,
  );
  if (missing.length > 0)
    throw usageError(
      `${missing.join(' and ')} must be set to test ${baseUrl} (credentials come from the environment, never from flags)`,
    );
  options.clientId = clientId!;
  options.clientSecret = clientSecret!;
}

/** `--expect-scopes`, `--allow-writes`, `--certify`: what the run expects and may do. */
function runFlags(options: ConformanceOptions, values: Values): void {
  if (values['expect-scopes'] !== undefined) {
    const list = parseScopeList(values['expect-scopes']);
    if (list.length === 0)
      throw usageError('--expect-scopes needs at least one scope, e.g. "read:loans create:loan_draft"');
    options.expectScopes = list;
  }
  if (values['allow-writes']) options.allowWrites = true;
  if (values.certify) options.certify = true;
}

/**
 * `--other-partner-id`, `--other-audience`, and a second partner's client (PARTNER_OTHER_CLIENT_ID and
 * PARTNER_OTHER_CLIENT_SECRET, both or neither): what partner-isolation and audience-foreign use.
 */
function otherPartnerFlags(options: ConformanceOptions, values: Values, env: Env): void {
  if (values['other-partner-id'] !== undefined) {
    const id = values['other-partner-id'].trim();
    if (id === '' || /[/?#\s]/.test(id))
      throw usageError(
        `--other-partner-id must be a partner identifier (as shown under Account > Profile), without "/", "?", "#" or spaces; got ${JSON.stringify(values['other-partner-id'])}`,
      );
    options.otherPartnerId = id;
  }
  if (values['other-audience'] !== undefined) options.otherAudience = values['other-audience'];
  const otherId = nonEmpty(env.PARTNER_OTHER_CLIENT_ID);
  const otherSecret = nonEmpty(env.PARTNER_OTHER_CLIENT_SECRET);
  if ((otherId === undefined) !== (otherSecret === undefined))
    throw usageError(
      `${otherId === undefined ? 'PARTNER_OTHER_CLIENT_ID' : 'PARTNER_OTHER_CLIENT_SECRET'} is missing: a second partner's client needs both PARTNER_OTHER_CLIENT_ID and PARTNER_OTHER_CLIENT_SECRET`,
    );
  if (otherId !== undefined && otherSecret !== undefined) {
    options.otherClientId = otherId;
    options.otherClientSecret = otherSecret;
  }
}

/** `--listen HOST`: where the suite's own issuer listens, a host the target can reach. */
function listenFlag(options: ConformanceOptions, values: Values): void {
  if (values.listen === undefined) return;
  const host = values.listen.trim();
  if (host === '' || /[/\s@]/.test(host))
    throw usageError(
      `--listen needs a host name or IP address the target can reach (e.g. 10.0.0.5 or conformance.internal), got ${JSON.stringify(values.listen)}`,
    );
  options.listen = host;
}

/** `--max-expiry-wait SECONDS`: the longest real wait for a token to expire, 0 to 86400. */
function expiryWaitFlag(options: ConformanceOptions, values: Values): void {
  const text = values['max-expiry-wait'];
  if (text === undefined) return;
  if (!/^\d+$/.test(text) || Number(text) > 86_400)
    throw usageError(
      `--max-expiry-wait must be a whole number of seconds from 0 to 86400, got ${JSON.stringify(text)}`,
    );
  options.maxExpiryWaitSeconds = Number(text);
}

/** `--only ID,…` (at least one) and `--skip ID,…`: the checks run. */
function checkIdFlags(options: ConformanceOptions, values: Values): void {
  const only = idList(values.only);
  const skip = idList(values.skip);
  if (only !== undefined) {
    if (only.length === 0) throw usageError('--only needs at least one check id');
    options.only = only;
  }
  if (skip !== undefined) options.skip = skip;
}

/** `--report-json`, `--report-junit`, `--report-html`: each a file of its own. */
function reportFlags(values: Values): CliConfig['reports'] {
  const json = reportPath('report-json', values['report-json']);
  const junit = reportPath('report-junit', values['report-junit']);
  const html = reportPath('report-html', values['report-html']);
  const paths = [json, junit, html].filter((path): path is string => path !== undefined);
  const repeated = paths.find((path, index) => paths.indexOf(path) !== index);
  if (repeated)
    throw usageError(`the same path ${repeated} is given for two reports; give each report its own file`);
  return { ...(json && { json }), ...(junit && { junit }), ...(html && { html }) };
}

/** `partner-conformance [flags]`: certifies a token endpoint and partner API; returns the exit code (0/1/2/3). */
export async function serverMain(argv: readonly string[], io: CliIo): Promise<number> {
  const config = parseCliArgs(argv, io.env);
  if (config.help) {
    io.stdout.write(`${usageText}\nChecks: ${checkIds.join(', ')}\n`);
    return 0;
  }
  if (config.version) {
    io.stdout.write(`${tool.version}\n`);
    return 0;
  }
  const reporter = new ConsoleReporter({ stream: io.stdout, env: io.env });
  const startedAt = new Date();
  let run: ConformanceRun;
  try {
    run = await runConformanceDetailed({
      ...config.options,
      ...io.overrides,
      onTarget: (info) => reporter.start(info, tool),
      onCheckStart: (check) => reporter.started(check),
      onCheckResult: (result) => reporter.result(result),
    });
  } catch (error) {
    // The run stopped before any check (the preflight): the reports asked for still say why.
    if (error instanceof ConformanceError && error.code !== 'ERR_USAGE')
      await writeReports(reportWrites(config, stoppedRun(config.options, error, startedAt)), io).catch(
        () => undefined,
      );
    throw error;
  }
  reporter.finish(run.report);
  await writeReports(reportWrites(config, run), io);
  return exitCodeFor(run.report.checks, { certify: run.report.certify });
}

function reportWrites(config: CliConfig, run: ConformanceRun): Array<[string, string]> {
  const writes: Array<[string, string]> = [];
  if (config.reports.json) writes.push([config.reports.json, formatJsonReport(run.report)]);
  if (config.reports.junit) writes.push([config.reports.junit, formatJunitReport(run.report)]);
  if (config.reports.html) writes.push([config.reports.html, formatHtmlReport(run.report, run.target)]);
  return writes;
}
