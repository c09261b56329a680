import { resolve } from 'node:path';
import { scopes as knownScopes } from '@partner-lending/spec';
import { clientCheckIds } from '../client/checks/index.js';
import type { ScenarioName } from '../client/session.js';
import { scenarioNames } from '../client/stage.js';
import { certificationPlan } from '../common/certification-plan.js';
import { usageError } from '../errors.js';
import type { ClientCliConfig } from './client-config.js';
import { parseFlags, reportPath } from './io.js';

/** The client command's flags (`parseClientArgs`). */
export const flags = {
  ttl: { type: 'string' },
  'long-ttl': { type: 'string' },
  scopes: { type: 'string' },
  scenario: { type: 'string', multiple: true },
  'no-faults': { type: 'boolean' },
  timeout: { type: 'string' },
  duration: { type: 'string' },
  port: { type: 'string' },
  'auth-port': { type: 'string' },
  listen: { type: 'string' },
  'public-url': { type: 'string' },
  json: { type: 'boolean' },
  certify: { type: 'boolean' },
  partner: { type: 'string' },
  'integration-version': { type: 'string' },
  only: { type: 'string' },
  'save-session': { type: 'string' },
  judge: { type: 'string' },
  'report-json': { type: 'string' },
  'report-junit': { type: 'string' },
  'report-html': { type: 'string' },
  service: { type: 'string' },
  'service-key-file': { type: 'string' },
  attestation: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function wholeNumber(flag: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max)
    throw usageError(`--${flag} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`);
  return Number(value);
}

/** Reads the client-mode arguments (everything after `client`); COMMAND is what follows `--`. */
export function parseClientArgs(argv: readonly string[]): ClientCliConfig {
  const separator = argv.indexOf('--');
  const own = separator < 0 ? [...argv] : argv.slice(0, separator);
  const command = separator < 0 ? [] : argv.slice(separator + 1);
  const { values, positionals } = parseFlags(own, flags, 'partner-conformance client', true);
  const config: ClientCliConfig = {
    options: {},
    json: values.json === true,
    reports: {},
    help: values.help === true,
  };
  if (config.help) return config;
  if (positionals.length > 0)
    throw usageError(
      `unexpected argument ${JSON.stringify(positionals[0])}: put the journey after --, e.g. partner-conformance client -- ${positionals.join(' ')}`,
    );
  if (separator >= 0 && command.length === 0)
    throw usageError('nothing follows --: give the journey command, e.g. -- node journey.mjs');
  const options = config.options;
  if (command.length > 0) options.command = command;
  if (values.judge !== undefined) judgeFlag(config, values, command, values.judge);
  planFlags(options, values);
  stageFlags(options, values, command);
  if (values.certify) certifyFlag(options, values);
  integrationFlags(options, values);
  if (values.only !== undefined) options.only = onlyFlag(values.only);
  outputFlags(config, values);
  hostedFlags(config, values, command);
  return config;
}

type Values = ReturnType<typeof parseFlags<typeof flags>>['values'];

/** `--judge FILE`: judges a session recorded before, so no flag of a run goes with it. */
function judgeFlag(config: ClientCliConfig, values: Values, command: readonly string[], judge: string): void {
  if (command.length > 0)
    throw usageError('--judge runs nothing: give either --judge FILE or -- COMMAND, not both');
  const runFlags = [
    'ttl',
    'long-ttl',
    'scopes',
    'scenario',
    'no-faults',
    'timeout',
    'duration',
    'port',
    'auth-port',
    'listen',
    'public-url',
    'json',
    'save-session',
    'partner',
    'integration-version',
  ] as const;
  const given = runFlags.find((flag) => values[flag] !== undefined);
  if (given) throw usageError(`--${given} has no effect with --judge (the session was recorded already)`);
  config.judge = resolve(judge);
}

/** `--ttl`, `--long-ttl`, `--scopes`, `--scenario`, `--no-faults`: a practice run's plan. */
function planFlags(options: ClientCliConfig['options'], values: Values): void {
  const ttl = wholeNumber('ttl', values.ttl, 1, 86_400);
  if (ttl !== undefined) options.ttlSeconds = ttl;
  const longTtl = wholeNumber('long-ttl', values['long-ttl'], 600, 10 * 365 * 86_400);
  if (longTtl !== undefined) options.longTtlSeconds = longTtl;
  if (values.scopes !== undefined) {
    const list = values.scopes.split(/[\s,]+/).filter(Boolean);
    const unknown = list.filter((scope) => !(knownScopes as readonly string[]).includes(scope));
    if (list.length === 0 || unknown.length > 0)
      throw usageError(
        `--scopes takes scopes among ${knownScopes.join(', ')}${unknown.length > 0 ? `; unknown: ${unknown.join(', ')}` : ''}`,
      );
    options.scopes = list;
  }
  if (values['no-faults'] && values.scenario)
    throw usageError('--no-faults and --scenario contradict each other: give one');
  if (values['no-faults']) options.scenarios = [];
  if (values.scenario) {
    const list = values.scenario.flatMap((item) => item.split(/[\s,]+/)).filter(Boolean);
    const unknown = list.filter((name) => !(scenarioNames as readonly string[]).includes(name));
    if (unknown.length > 0)
      throw usageError(
        `unknown scenario ${unknown.join(', ')}; the scenarios are ${scenarioNames.join(', ')}`,
      );
    options.scenarios = list as ScenarioName[];
  }
}

/** `--timeout`, `--duration`, `--port`, `--auth-port`, `--listen`, `--public-url`: the local stage. */
function stageFlags(options: ClientCliConfig['options'], values: Values, command: readonly string[]): void {
  const timeout = wholeNumber('timeout', values.timeout, 1, 86_400);
  if (timeout !== undefined) options.timeoutSeconds = timeout;
  const duration = wholeNumber('duration', values.duration, 1, 7 * 86_400);
  if (duration !== undefined) {
    if (command.length > 0)
      throw usageError(
        '--duration is for recording without a command; a journey ends when COMMAND exits (see --timeout)',
      );
    options.durationSeconds = duration;
  }
  const port = wholeNumber('port', values.port, 0, 65_535);
  if (port !== undefined) options.port = port;
  const authPort = wholeNumber('auth-port', values['auth-port'], 0, 65_535);
  if (authPort !== undefined) options.authPort = authPort;
  if (port !== undefined && port !== 0 && port === authPort)
    throw usageError('--port and --auth-port must differ');
  if (values.listen !== undefined) {
    const host = values.listen.trim();
    if (host === '' || /[/\s@]/.test(host))
      throw usageError(`--listen needs a host name or IP address, got ${JSON.stringify(values.listen)}`);
    options.listen = host;
  }
  if (values['public-url'] !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(values['public-url']);
    } catch {
      url = undefined;
    }
    if (
      !url ||
      !/^https?:$/.test(url.protocol) ||
      url.port !== '' ||
      url.pathname !== '/' ||
      url.search ||
      url.hash ||
      url.username ||
      url.password
    )
      throw usageError(
        '--public-url must be a scheme and host without port, path or credentials, e.g. http://host.docker.internal (the stage adds its ports)',
      );
    options.publicUrl = `${url.protocol}//${url.host}`;
  }
}

/** `--certify`: the vendor's plan as it is, no override. */
function certifyFlag(options: ClientCliConfig['options'], values: Values): void {
  options.certify = true;
  // The plan is the vendor's: a certification run takes no override (a practice run takes them all).
  const practice = (['ttl', 'long-ttl', 'scopes', 'scenario', 'no-faults'] as const).find(
    (flag) => values[flag] !== undefined,
  );
  if (practice && values.judge === undefined)
    throw usageError(
      `--${practice} changes the certification plan, which --certify follows as it is (plan ${certificationPlan.id}); drop --${practice}, or drop --certify for a practice run`,
    );
  if (values.service === undefined) options.plan = certificationPlan;
}

/** `--partner`, `--integration-version`: who the report names. */
function integrationFlags(options: ClientCliConfig['options'], values: Values): void {
  for (const [flag, key] of [
    ['partner', 'name'],
    ['integration-version', 'version'],
  ] as const) {
    const value = values[flag];
    if (value === undefined) continue;
    // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
    if (value.trim() === '' || value.length > 200 || /[\u0000-\u001f\u007f]/.test(value))
      throw usageError(
        `--${flag} takes up to 200 printable characters, got ${JSON.stringify(value.slice(0, 40))}`,
      );
    options.integration = { ...options.integration, [key]: value.trim() };
  }
}

/** `--only ID,…`: client check ids. */
function onlyFlag(value: string): string[] {
  const ids = value
    .split(',')
    .map((id) => id.trim())
    .filter(Boolean);
  const unknown = ids.filter((id) => !clientCheckIds.includes(id));
  if (ids.length === 0 || unknown.length > 0)
    throw usageError(
      `--only takes client check ids (${clientCheckIds.join(', ')})${unknown.length ? `; unknown: ${unknown.join(', ')}` : ''}`,
    );
  return ids;
}

/** `--save-session`, `--report-json`, `--report-junit`, `--report-html`: each its own file. */
function outputFlags(config: ClientCliConfig, values: Values): void {
  const save = reportPath('save-session', values['save-session']);
  if (save) config.saveSession = save;
  const json = reportPath('report-json', values['report-json']);
  const junit = reportPath('report-junit', values['report-junit']);
  const html = reportPath('report-html', values['report-html']);
  const paths = [json, junit, html, save].filter((path): path is string => path !== undefined);
  const repeated = paths.find((path, index) => paths.indexOf(path) !== index);
  if (repeated) throw usageError(`the same path ${repeated} is given twice; give each output its own file`);
  if (json) config.reports.json = json;
  if (junit) config.reports.junit = junit;
  if (html) config.reports.html = html;
}

/** `--service`, `--service-key-file`, `--attestation`: a run the certification service hosts. */
function hostedFlags(
  config: ClientCliConfig,
  values: Record<string, string | boolean | string[] | undefined>,
  command: readonly string[],
): void {
  const service = values.service as string | undefined;
  if (service === undefined) {
    for (const flag of ['service-key-file', 'attestation'] as const)
      if (values[flag] !== undefined) throw usageError(`--${flag} goes with --service URL (a hosted run)`);
    return;
  }
  let url: URL | undefined;
  try {
    url = new URL(service);
  } catch {
    url = undefined;
  }
  if (!url || !/^https?:$/.test(url.protocol) || url.search || url.hash || url.username || url.password)
    throw usageError(
      `--service takes the certification service's URL, e.g. https://certify.partner-lending.example, got ${JSON.stringify(service.slice(0, 80))}`,
    );
  if (values['service-key-file'] === undefined)
    throw usageError(
      '--service needs --service-key-file FILE: the file holding the API key the vendor gave you',
    );
  if (command.length === 0)
    throw usageError('--service runs a journey: give it after --, e.g. -- ./journey.sh');
  for (const flag of [
    'judge',
    'port',
    'auth-port',
    'listen',
    'public-url',
    'json',
    'duration',
    'only',
  ] as const)
    if (values[flag] !== undefined)
      throw usageError(
        `--${flag} is for a run on this machine; with --service the service hosts the stage and judges every check`,
      );
  config.service = `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
  config.serviceKeyFile = resolve(values['service-key-file'] as string);
  const attestation = reportPath('attestation', values.attestation as string | undefined);
  if (attestation) config.attestation = attestation;
}
