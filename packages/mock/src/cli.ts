import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { MockError } from './errors.js';
import { type FaultName, faultNames, parseFaults } from './faults.js';
import { type MockClient, parseClients } from './mock-client.js';
import { type Profile, profiles } from './profile.js';
import { type RunningMock, startMock } from './start-mock.js';

const usage = `Usage: partner-mock [options]

Starts the strict Partner Lending mock: an auth server and the partner API on two ports of 127.0.0.1.

Options:
  --port N              port of the partner API (default: random)
  --auth-port N         port of the auth server (default: random)
  --profile NAME        deployed | rfc9068 (default: deployed)
  --ttl SECONDS         access-token lifetime (default: 43200)
  --leeway SECONDS      exp/nbf leeway of the API (default: 0)
  --clients FILE        JSON array of { partnerId, clientId, clientSecret, authorizedScopes }
                        (default: three generated demo clients)
  --fault NAME          break one rule on purpose; repeatable (see the README's fault table)
  --json                print one JSON line with the addresses and clients (secrets included), nothing else
  --show-secrets        also print client secrets in the human-readable output
  -h, --help            show this help
`;

function usageError(message: string): never {
  throw new MockError('ERR_MOCK_USAGE', message);
}

function integerFlag(name: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const number = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(number) || number < min || number > max)
    usageError(`--${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}.`);
  return number;
}

function readClients(file: string): MockClient[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (cause) {
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

interface CliOptions {
  apiPort?: number;
  authPort?: number;
  profile: Profile;
  tokenTtlSeconds?: number;
  leewaySeconds?: number;
  clients?: MockClient[];
  faults: FaultName[];
  json: boolean;
  showSecrets: boolean;
  help: boolean;
}

export function parseCli(argv: readonly string[]): CliOptions {
  let parsed: ReturnType<typeof parse>;
  function parse() {
    return parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        port: { type: 'string' },
        'auth-port': { type: 'string' },
        profile: { type: 'string' },
        ttl: { type: 'string' },
        leeway: { type: 'string' },
        clients: { type: 'string' },
        fault: { type: 'string', multiple: true },
        json: { type: 'boolean' },
        'show-secrets': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  }
  try {
    parsed = parse();
  } catch (cause) {
    usageError(`${(cause as Error).message.split(/\.\s|\n/)[0]}. Run partner-mock --help for the options.`);
  }
  const { values } = parsed;
  const profile = (values.profile ?? 'deployed') as Profile;
  if (!profiles.includes(profile))
    usageError(`--profile must be one of ${profiles.join(', ')}, got ${JSON.stringify(values.profile)}.`);
  const options: CliOptions = {
    profile,
    faults: parseFaults(values.fault ?? []),
    json: values.json ?? false,
    showSecrets: values['show-secrets'] ?? false,
    help: values.help ?? false,
  };
  const apiPort = integerFlag('port', values.port, 0, 65_535);
  const authPort = integerFlag('auth-port', values['auth-port'], 0, 65_535);
  const ttl = integerFlag('ttl', values.ttl, 1, 10 * 365 * 86_400);
  const leeway = integerFlag('leeway', values.leeway, 0, 86_400);
  if (apiPort !== undefined) options.apiPort = apiPort;
  if (authPort !== undefined) options.authPort = authPort;
  if (ttl !== undefined) options.tokenTtlSeconds = ttl;
  if (leeway !== undefined) options.leewaySeconds = leeway;
  if (values.clients !== undefined) options.clients = readClients(values.clients);
  return options;
}

function describe(mock: RunningMock, showSecrets: boolean): string {
  const lines = [
    `partner-mock listening (profile ${mock.profile})`,
    `  auth server  ${mock.authUrl}  (token endpoint ${mock.tokenUrl})`,
    `  JWKS         ${mock.jwksUrl}`,
    `  partner API  ${mock.baseUrl}  (also the audience)`,
    `  issuer       ${mock.issuer}`,
    `  faults       ${mock.faults.length ? mock.faults.join(', ') : 'none'}`,
    '  clients:',
    ...mock.clients.map(
      (client) =>
        `    partnerId ${client.partnerId}  client_id ${client.clientId}  scopes ${client.authorizedScopes.join(' ') || '(none)'}` +
        (showSecrets ? `  client_secret ${client.clientSecret}` : ''),
    ),
  ];
  if (!showSecrets) lines.push('  (client secrets are hidden; --show-secrets or --json prints them)');
  lines.push('Stop with Ctrl+C.');
  return `${lines.join('\n')}\n`;
}

export async function main(argv: readonly string[]): Promise<number> {
  let options: CliOptions;
  try {
    options = parseCli(argv);
  } catch (error) {
    if (error instanceof MockError) {
      process.stderr.write(`partner-mock: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  if (options.help) {
    process.stdout.write(usage);
    process.stdout.write(`\nFaults: ${faultNames.join(', ')}\n`);
    return 0;
  }
  let mock: RunningMock;
  try {
    mock = await startMock({
      profile: options.profile,
      faults: options.faults,
      ...(options.apiPort !== undefined && { apiPort: options.apiPort }),
      ...(options.authPort !== undefined && { authPort: options.authPort }),
      ...(options.tokenTtlSeconds !== undefined && { tokenTtlSeconds: options.tokenTtlSeconds }),
      ...(options.leewaySeconds !== undefined && { leewaySeconds: options.leewaySeconds }),
      ...(options.clients !== undefined && { clients: options.clients }),
    });
  } catch (error) {
    process.stderr.write(`partner-mock: ${(error as Error).message}\n`);
    return 1;
  }
  if (options.json) {
    process.stdout.write(
      `${JSON.stringify({
        authUrl: mock.authUrl,
        baseUrl: mock.baseUrl,
        audience: mock.audience,
        issuer: mock.issuer,
        clients: mock.clients.map(({ partnerId, clientId, clientSecret, authorizedScopes }) => ({
          partnerId,
          clientId,
          clientSecret,
          authorizedScopes,
        })),
      })}\n`,
    );
  } else {
    process.stdout.write(describe(mock, options.showSecrets));
  }
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await mock.close();
  if (!options.json) process.stdout.write('partner-mock stopped\n');
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`partner-mock: unexpected error: ${(error as Error).message}\n`);
    process.exitCode = 1;
  },
);
