import { readFileSync, type Stats, statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { MockError } from './errors.js';
import type { EvidenceOptions } from './evidence-reporter.js';
import { type FaultName, parseFaults } from './faults.js';
import { type MockClient, parseClients } from './mock-client.js';
import type { RegisterOptions } from './production-register.js';
import { type MockProfile, mockProfiles } from './profile.js';
import type { MockOptions } from './start-mock.js';

export const usage = `Usage: partner-mock [options]

Starts the strict Partner Lending mock: an auth server and the partner API on two ports of 127.0.0.1.

Options:
  --port N              port of the partner API (default: random)
  --auth-port N         port of the auth server (default: random)
  --profile NAME        deployed | rfc9068 | production (default: deployed); production issues
                        tokens only to partners the register lists as active
  --register URL        production: the certification service's register, e.g. https://certify.example/register
  --register-key-file FILE
                        production: a file holding the register reader key
  --register-jwks URL   production: the service's JWKS (default: <register origin>/.well-known/jwks.json)
  --register-lookup L   production: register (read the whole register) or partner (at a token request,
                        read only that partner's entry, URL/partners/ID, each cached on its own) (default register)
  --register-state FILE production: keep the replay floor (the highest register seq taken) in FILE across
                        restarts (default: none, in memory only: a restarted gate takes any valid copy once)
  --register-clock-skew SECONDS
                        production: how far ahead of this clock a register's iat may be (default: 60)
  --register-changes on|off
                        production: hold the service's change notice (URL/changes, a long poll) and read the
                        register again as soon as it changes, e.g. a revocation; a failing notice leaves the
                        max-age pull (default: on)
  --evidence URL        production: report every exchange served (token endpoint and API) to the certification
                        service's evidence endpoint, e.g. https://certify.example/evidence (default: none, no report)
  --evidence-key-file FILE
                        production: a file holding the evidence reporter key (admin add-evidence-reporter)
  --evidence-spool FILE production: keep what the service has not acknowledged in FILE across restarts
                        (default: none, in memory only: a stop loses what is not yet sent)
  --evidence-spool-bytes N
                        production: largest spool file (default: 67108864 = 64 MiB)
  --evidence-buffer N   production: exchanges held before new ones are dropped and counted (default: 10000)
  --evidence-fingerprint-key-file FILE
                        production: a file holding the key of the tokens' fingerprints (at least 32 characters;
                        default: a new random key per start)
  --operator-key-file FILE
                        enable POST /operator/revoke-tokens (revokes every token issued to a partner) with the
                        key in FILE as the bearer token (default: off, the route answers 404)
  --ttl SECONDS         access-token lifetime (default: 43200)
  --leeway SECONDS      exp/nbf leeway of the API (default: 0)
  --clients FILE        JSON array of { partnerId, clientId, clientSecret, authorizedScopes }
                        (default: three generated demo clients; required by --profile production,
                        each partnerId being the partner id the register lists)
  --fault NAME          break one rule on purpose; repeatable (see the README's fault table)
  --max-stored N        objects kept from creates, all partners (default: 10000; oldest dropped first)
  --max-stored-per-partner N
                        objects kept from creates per partner (default: 1000)
  --max-stored-bytes N  bytes of JSON kept from creates, all partners (default: 67108864 = 64 MiB)
  --request-timeout MS  time a request may take to arrive, headers and body (default: 30000)
  --headers-timeout MS  time the request headers may take to arrive (default: 10000)
  --json                print one JSON line with the addresses and clients (secrets included), nothing else
  --show-secrets        also print client secrets in the human-readable output
  -h, --help            show this help
`;

function usageError(message: string): never {
  throw new MockError('ERR_MOCK_USAGE', message);
}

const quote = (value: string) => JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);

function integerFlag(name: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const number = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(number) || number < min || number > max)
    usageError(`--${name} must be an integer from ${min} to ${max}, got ${quote(value)}.`);
  return number;
}

/** Largest clients file read: 1 MiB. */
const clientsFileLimit = 1024 * 1024;

function fileKind(stats: Stats): string {
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a FIFO (named pipe)';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

function readClients(file: string): MockClient[] {
  let text: string;
  try {
    // stat first: opening a FIFO would block until a writer comes, and a device may never end.
    const stats = statSync(file);
    if (!stats.isFile())
      throw new MockError(
        'ERR_MOCK_CLIENTS',
        `the clients file ${file} is ${fileKind(stats)}, not a regular file. Give a JSON file.`,
      );
    if (stats.size > clientsFileLimit)
      throw new MockError(
        'ERR_MOCK_CLIENTS',
        `the clients file ${file} is larger than 1 MiB. Give a JSON array of clients.`,
      );
    text = readFileSync(file, 'utf8');
  } catch (cause) {
    if (cause instanceof MockError) throw cause;
    throw new MockError(
      'ERR_MOCK_CLIENTS',
      `cannot read the clients file ${file}: ${(cause as NodeJS.ErrnoException).code ?? 'error'}. Give a readable JSON file.`,
      { cause },
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw new MockError(
      'ERR_MOCK_CLIENTS',
      `the clients file ${file} is not valid JSON. Give a JSON array of clients.`,
      {
        cause,
      },
    );
  }
  return parseClients(value, `the clients file ${file}`);
}

/** Largest register key file read: 4 KiB. */
const keyFileLimit = 4096;

/**
 * A key file's one word (surrounding whitespace dropped), of at least `min` characters. Never echoed.
 * `what` names the file (`register key`) and `holds` the key (`the register reader key`).
 */
function readKeyFile(
  file: string,
  what = 'register key',
  holds = 'the register reader key',
  min = 1,
): string {
  let text: string;
  try {
    const stats = statSync(file);
    if (!stats.isFile())
      usageError(
        `the ${what} file ${file} is ${fileKind(stats)}, not a regular file. Give a file holding the key.`,
      );
    if (stats.size > keyFileLimit)
      usageError(`the ${what} file ${file} is larger than 4 KiB; it should hold the key alone.`);
    text = readFileSync(file, 'utf8');
  } catch (cause) {
    if (cause instanceof MockError) throw cause;
    usageError(
      `cannot read the ${what} file ${file}: ${(cause as NodeJS.ErrnoException).code ?? 'error'}. Give a readable file holding the key.`,
    );
  }
  const key = text!.trim();
  if (key === '' || /\s/.test(key))
    usageError(`the ${what} file ${file} must hold ${holds} alone (one word), not empty.`);
  if (key.length < min)
    usageError(`the ${what} file ${file} holds a key of ${key.length} characters; it needs at least ${min}.`);
  return key;
}

export interface CliOptions {
  apiPort?: number;
  authPort?: number;
  profile: MockProfile;
  register?: RegisterOptions;
  evidence?: EvidenceOptions;
  operatorKey?: string;
  tokenTtlSeconds?: number;
  leewaySeconds?: number;
  clients?: MockClient[];
  maxStored?: number;
  maxStoredPerPartner?: number;
  maxStoredBytes?: number;
  requestTimeoutMs?: number;
  headersTimeoutMs?: number;
  faults: FaultName[];
  json: boolean;
  showSecrets: boolean;
  help: boolean;
}

const options = {
  port: { type: 'string', expects: 'an integer from 0 to 65535' },
  'auth-port': { type: 'string', expects: 'an integer from 0 to 65535' },
  profile: { type: 'string', expects: `one of ${mockProfiles.join(', ')}` },
  register: { type: 'string', expects: 'the register URL of the certification service' },
  'register-key-file': { type: 'string', expects: 'the path of a file holding the register reader key' },
  'register-jwks': { type: 'string', expects: "the URL of the certification service's JWKS" },
  'register-lookup': { type: 'string', expects: 'register or partner' },
  'register-state': { type: 'string', expects: 'the path of the register state file' },
  'register-clock-skew': { type: 'string', expects: 'a number of seconds' },
  'register-changes': { type: 'string', expects: 'on or off' },
  evidence: { type: 'string', expects: 'the evidence URL of the certification service' },
  'evidence-key-file': { type: 'string', expects: 'the path of a file holding the evidence reporter key' },
  'evidence-spool': { type: 'string', expects: 'the path of the evidence spool file' },
  'evidence-spool-bytes': { type: 'string', expects: 'a number of bytes' },
  'evidence-buffer': { type: 'string', expects: 'a number of exchanges' },
  'evidence-fingerprint-key-file': {
    type: 'string',
    expects: 'the path of a file holding the fingerprint key',
  },
  'operator-key-file': { type: 'string', expects: 'the path of a file holding the operator key' },
  ttl: { type: 'string', expects: 'a number of seconds' },
  leeway: { type: 'string', expects: 'a number of seconds' },
  clients: { type: 'string', expects: 'the path of a JSON file' },
  fault: { type: 'string', multiple: true, expects: 'a fault name (see --help)' },
  'max-stored': { type: 'string', expects: 'a number of objects' },
  'max-stored-per-partner': { type: 'string', expects: 'a number of objects' },
  'max-stored-bytes': { type: 'string', expects: 'a number of bytes' },
  'request-timeout': { type: 'string', expects: 'a number of milliseconds' },
  'headers-timeout': { type: 'string', expects: 'a number of milliseconds' },
  json: { type: 'boolean' },
  'show-secrets': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

type OptionName = keyof typeof options;
const isOption = (name: string): name is OptionName => Object.hasOwn(options, name);
const optionOf = (arg: string) => {
  if (arg === '-h') return 'help';
  const name = arg.startsWith('--') ? arg.slice(2).split('=')[0]! : undefined;
  return name !== undefined && isOption(name) ? name : undefined;
};

// A URL with userinfo (scheme://user:password@host): never echoed, since it holds a password.
const urlWithUserinfo = /[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#\s]*@/;

/**
 * Checks what node:util's parseArgs would misreport, and rewrites `--port -1` as `--port=-1` so that
 * a negative number gets the option's own message instead of "argument is ambiguous".
 */
function prepare(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index]!;
    const name = optionOf(arg);
    if (urlWithUserinfo.test(arg))
      usageError(
        `${name ? `--${name}` : 'an argument'} holds a URL with credentials (user:password@), which is refused and not shown. Keep passwords out of command lines.`,
      );
    const spec = name === undefined ? undefined : options[name];
    if (spec?.type === 'string' && !arg.includes('=')) {
      const next = argv[index + 1];
      if (next === undefined || optionOf(next) !== undefined)
        usageError(`--${name} needs a value: ${spec.expects}.`);
      if (urlWithUserinfo.test(next))
        usageError(
          `--${name} holds a URL with credentials (user:password@), which is refused and not shown. Keep passwords out of command lines.`,
        );
      out.push(`${arg}=${next}`);
      index += 1;
    } else out.push(arg);
  }
  return out;
}

export function parseCli(argv: readonly string[]): CliOptions {
  let parsed: ReturnType<typeof parse>;
  function parse(args: string[]) {
    return parseArgs({ args, strict: true, allowPositionals: false, options });
  }
  const args = prepare(argv);
  try {
    parsed = parse(args);
  } catch (cause) {
    const message = (cause as Error).message.split(/\.\s|\n/)[0]!.replace(/\.$/, '');
    usageError(`${message}. Run partner-mock --help for the options.`);
  }
  const { values } = parsed;
  const profile = (values.profile ?? 'deployed') as MockProfile;
  if (!mockProfiles.includes(profile))
    usageError(`--profile must be one of ${mockProfiles.join(', ')}, got ${quote(String(values.profile))}.`);
  const registerFlags = (
    [
      'register',
      'register-key-file',
      'register-jwks',
      'register-lookup',
      'register-state',
      'register-clock-skew',
      'register-changes',
      'evidence',
      'evidence-key-file',
      'evidence-spool',
      'evidence-spool-bytes',
      'evidence-buffer',
      'evidence-fingerprint-key-file',
    ] as const
  ).filter((name) => values[name] !== undefined);
  if (profile !== 'production' && registerFlags.length > 0)
    usageError(`--${registerFlags[0]} is for --profile production only.`);
  if (profile === 'production') {
    if (values.register === undefined || values['register-key-file'] === undefined)
      usageError(
        '--profile production needs --register URL (the certification service register) and --register-key-file FILE (a register reader key from partner-certification-service admin add-register-reader).',
      );
    if (values.clients === undefined)
      usageError(
        '--profile production needs --clients FILE: the production clients, each partnerId being the partner id the register lists.',
      );
  }
  const result: CliOptions = {
    profile,
    faults: parseFaults(values.fault ?? []),
    json: values.json ?? false,
    showSecrets: values['show-secrets'] ?? false,
    help: values.help ?? false,
  };
  const numbers = {
    apiPort: integerFlag('port', values.port, 0, 65_535),
    authPort: integerFlag('auth-port', values['auth-port'], 0, 65_535),
    tokenTtlSeconds: integerFlag('ttl', values.ttl, 1, 10 * 365 * 86_400),
    leewaySeconds: integerFlag('leeway', values.leeway, 0, 86_400),
    maxStored: integerFlag('max-stored', values['max-stored'], 0, 10_000_000),
    maxStoredPerPartner: integerFlag(
      'max-stored-per-partner',
      values['max-stored-per-partner'],
      0,
      10_000_000,
    ),
    maxStoredBytes: integerFlag('max-stored-bytes', values['max-stored-bytes'], 0, Number.MAX_SAFE_INTEGER),
    requestTimeoutMs: integerFlag('request-timeout', values['request-timeout'], 1, 3_600_000),
    headersTimeoutMs: integerFlag('headers-timeout', values['headers-timeout'], 1, 3_600_000),
  };
  for (const [key, value] of Object.entries(numbers))
    if (value !== undefined) result[key as keyof typeof numbers] = value;
  if (values.clients !== undefined) result.clients = readClients(values.clients);
  if (values['operator-key-file'] !== undefined)
    result.operatorKey = readKeyFile(values['operator-key-file'], 'operator key', 'the operator key', 16);
  if (profile === 'production') {
    for (const name of ['register', 'register-jwks'] as const) {
      const value = values[name];
      if (value !== undefined && !/^https?:\/\/[^\s]+$/.test(value))
        usageError(`--${name} must be an http(s) URL, got ${quote(value)}.`);
    }
    const lookup = values['register-lookup'];
    if (lookup !== undefined && lookup !== 'register' && lookup !== 'partner')
      usageError(`--register-lookup must be register or partner, got ${quote(lookup)}.`);
    result.register = {
      url: values.register!,
      key: readKeyFile(values['register-key-file']!),
      ...(values['register-jwks'] === undefined ? {} : { jwksUrl: values['register-jwks'] }),
      ...(lookup === 'partner' ? { lookup: 'partner' as const } : {}),
      ...(values['register-state'] === undefined ? {} : { stateFile: values['register-state'] }),
    };
    const skew = integerFlag('register-clock-skew', values['register-clock-skew'], 0, 3600);
    if (skew !== undefined) result.register.clockSkewSeconds = skew;
    const changes = values['register-changes'];
    if (changes !== undefined && changes !== 'on' && changes !== 'off')
      usageError(`--register-changes must be on or off, got ${quote(changes)}.`);
    if (changes === 'off') result.register.changes = false;
    const evidence = evidenceOptions(values);
    if (evidence !== undefined) result.evidence = evidence;
  }
  return result;
}

/** `--evidence …`: undefined without `--evidence`, which then needs `--evidence-key-file`. */
function evidenceOptions(values: Partial<Record<OptionName, unknown>>): EvidenceOptions | undefined {
  const url = values.evidence as string | undefined;
  const keyFile = values['evidence-key-file'] as string | undefined;
  if (url === undefined) {
    const stray = (
      [
        'evidence-key-file',
        'evidence-spool',
        'evidence-spool-bytes',
        'evidence-buffer',
        'evidence-fingerprint-key-file',
      ] as const
    ).find((name) => values[name] !== undefined);
    if (stray !== undefined)
      usageError(`--${stray} needs --evidence URL (the certification service's evidence endpoint).`);
    return undefined;
  }
  if (!/^https?:\/\/[^\s]+$/.test(url)) usageError(`--evidence must be an http(s) URL, got ${quote(url)}.`);
  if (keyFile === undefined)
    usageError(
      '--evidence needs --evidence-key-file FILE (an evidence reporter key from partner-certification-service admin add-evidence-reporter).',
    );
  const spoolFile = values['evidence-spool'] as string | undefined;
  const fingerprintFile = values['evidence-fingerprint-key-file'] as string | undefined;
  const spoolMaxBytes = integerFlag(
    'evidence-spool-bytes',
    values['evidence-spool-bytes'] as string | undefined,
    4096,
    2 ** 40,
  );
  const bufferRecords = integerFlag(
    'evidence-buffer',
    values['evidence-buffer'] as string | undefined,
    1,
    10_000_000,
  );
  return {
    url,
    key: readKeyFile(keyFile, 'evidence key', 'the evidence reporter key'),
    ...(spoolFile === undefined ? {} : { spoolFile }),
    ...(spoolMaxBytes === undefined ? {} : { spoolMaxBytes }),
    ...(bufferRecords === undefined ? {} : { bufferRecords }),
    ...(fingerprintFile === undefined
      ? {}
      : { fingerprintKey: readKeyFile(fingerprintFile, 'fingerprint key', 'the fingerprint key', 32) }),
  };
}

/** The startMock options a command line asks for. */
export function toMockOptions(cli: CliOptions): MockOptions {
  const { json: _json, showSecrets: _showSecrets, help: _help, ...options } = cli;
  return options;
}
