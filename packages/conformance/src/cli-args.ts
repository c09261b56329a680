import { existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConformanceError } from './errors.js';
import type { ConformanceOptions } from './run-conformance.js';
import { parseScopeList } from './scope-set.js';

export const usageText = `Usage: partner-conformance [--target mock]
       partner-conformance --auth-url URL --base-url URL [--audience URL]
           [--expect-scopes "read:loans create:loan_draft"] [--allow-writes]
           [--max-expiry-wait SECONDS] [--only ID,...] [--skip ID,...]
           [--report-json FILE] [--report-junit FILE] [--report-html FILE]

With no target flags the embedded mock is started and tested.
Credentials: PARTNER_CLIENT_ID and PARTNER_CLIENT_SECRET (never flags).
Also read: PARTNER_AUTH_URL, PARTNER_BASE_URL, PARTNER_AUDIENCE (flags win; --target mock ignores them).
Exit: 0 every must check passed, 1 a must check failed, 2 usage or configuration error, 3 target unreachable.
`;

export interface CliConfig {
  options: ConformanceOptions;
  reports: { json?: string; junit?: string; html?: string };
  help: boolean;
  version: boolean;
}

const usage = (message: string) => new ConformanceError('ERR_USAGE', message);

const flags = {
  target: { type: 'string' },
  'auth-url': { type: 'string' },
  'base-url': { type: 'string' },
  audience: { type: 'string' },
  'expect-scopes': { type: 'string' },
  'allow-writes': { type: 'boolean' },
  'max-expiry-wait': { type: 'string' },
  only: { type: 'string' },
  skip: { type: 'string' },
  'report-json': { type: 'string' },
  'report-junit': { type: 'string' },
  'report-html': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const;

function parse(argv: readonly string[]) {
  try {
    return parseArgs({ args: [...argv], options: flags, strict: true, allowPositionals: false });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const unknown = /Unknown option '([^']+)'/.exec(message);
    if (unknown) throw usage(`unknown option ${unknown[1]}; run partner-conformance --help for the flags`);
    const positional = /Unexpected argument '([^']+)'/.exec(message);
    if (positional)
      throw usage(
        `unexpected argument ${JSON.stringify(positional[1])}; run partner-conformance --help for the flags`,
      );
    const option = /Option '(--[\w-]+)/.exec(message);
    if (option && /argument (missing|is ambiguous)/.test(message))
      throw usage(`${option[1]} needs a value (for a value starting with "-", write ${option[1]}=VALUE)`);
    throw usage(message.split('\n')[0]!.replace(/\.$/, ''));
  }
}

const idList = (value: string | undefined) =>
  value === undefined
    ? undefined
    : value
        .split(',')
        .map((id) => id.trim())
        .filter((id) => id.length > 0);

function reportPath(flag: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value.trim() === '') throw usage(`--${flag} needs a file path`);
  const path = resolve(value);
  const dir = dirname(path);
  if (!existsSync(dir) || !statSync(dir).isDirectory())
    throw usage(`--${flag}: the directory ${dir} does not exist; create it or choose another path`);
  if (existsSync(path) && statSync(path).isDirectory())
    throw usage(`--${flag}: ${path} is a directory, expected a file path`);
  return path;
}

/** Reads argv and the environment into options; throws ConformanceError ERR_USAGE with a one-line message. */
export function parseCliArgs(argv: readonly string[], env: Record<string, string | undefined>): CliConfig {
  const { values } = parse(argv);
  const config: CliConfig = {
    options: {},
    reports: {},
    help: values.help === true,
    version: values.version === true,
  };
  if (config.help || config.version) return config;
  const options = config.options;
  if (values.target !== undefined && values.target !== 'mock')
    throw usage(
      `--target accepts only "mock" (the embedded mock); to test a service give --auth-url and --base-url`,
    );
  const explicitMock = values.target === 'mock';
  if (explicitMock && (values['auth-url'] !== undefined || values['base-url'] !== undefined))
    throw usage('--target mock cannot be combined with --auth-url or --base-url');
  const nonEmpty = (value: string | undefined) => (value === undefined || value === '' ? undefined : value);
  const authUrl = values['auth-url'] ?? (explicitMock ? undefined : nonEmpty(env.PARTNER_AUTH_URL));
  const baseUrl = values['base-url'] ?? (explicitMock ? undefined : nonEmpty(env.PARTNER_BASE_URL));
  if (authUrl !== undefined || baseUrl !== undefined) {
    if (authUrl === undefined) throw usage('--base-url needs --auth-url (or PARTNER_AUTH_URL) too');
    if (baseUrl === undefined) throw usage('--auth-url needs --base-url (or PARTNER_BASE_URL) too');
    options.authUrl = authUrl;
    options.baseUrl = baseUrl;
    const audience = values.audience ?? nonEmpty(env.PARTNER_AUDIENCE);
    if (audience !== undefined) options.audience = audience;
    const clientId = nonEmpty(env.PARTNER_CLIENT_ID);
    const clientSecret = nonEmpty(env.PARTNER_CLIENT_SECRET);
    const missing = [clientId ? '' : 'PARTNER_CLIENT_ID', clientSecret ? '' : 'PARTNER_CLIENT_SECRET'].filter(
      Boolean,
    );
    if (missing.length > 0)
      throw usage(
        `${missing.join(' and ')} must be set to test ${baseUrl} (credentials come from the environment, never from flags)`,
      );
    options.clientId = clientId!;
    options.clientSecret = clientSecret!;
  } else if (values.audience !== undefined) options.audience = values.audience;
  if (values['expect-scopes'] !== undefined) {
    const list = parseScopeList(values['expect-scopes']);
    if (list.length === 0)
      throw usage('--expect-scopes needs at least one scope, e.g. "read:loans create:loan_draft"');
    options.expectScopes = list;
  }
  if (values['allow-writes']) options.allowWrites = true;
  if (values['max-expiry-wait'] !== undefined) {
    const text = values['max-expiry-wait'];
    if (!/^\d+$/.test(text) || Number(text) > 86_400)
      throw usage(
        `--max-expiry-wait must be a whole number of seconds from 0 to 86400, got ${JSON.stringify(text)}`,
      );
    options.maxExpiryWaitSeconds = Number(text);
  }
  const only = idList(values.only);
  const skip = idList(values.skip);
  if (only !== undefined) {
    if (only.length === 0) throw usage('--only needs at least one check id');
    options.only = only;
  }
  if (skip !== undefined) options.skip = skip;
  const json = reportPath('report-json', values['report-json']);
  const junit = reportPath('report-junit', values['report-junit']);
  const html = reportPath('report-html', values['report-html']);
  if (json) config.reports.json = json;
  if (junit) config.reports.junit = junit;
  if (html) config.reports.html = html;
  return config;
}
