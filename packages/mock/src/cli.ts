import { type CliOptions, parseCli, toMockOptions, usage } from './cli-options.js';
import { MockError } from './errors.js';
import { faultNames } from './faults.js';
import { type RunningMock, startMock } from './start-mock.js';

function describe(mock: RunningMock, options: CliOptions): string {
  const { showSecrets } = options;
  const lines = [
    `partner-mock listening (profile ${mock.profile})`,
    `  auth server  ${mock.authUrl}  (token endpoint ${mock.tokenUrl})`,
    `  JWKS         ${mock.jwksUrl}`,
    `  partner API  ${mock.baseUrl}  (also the audience)`,
    `  issuer       ${mock.issuer}`,
    `  faults       ${mock.faults.length ? mock.faults.join(', ') : 'none'}`,
    ...registerLines(mock),
    ...evidenceLines(mock),
    ...(options.operatorKey === undefined
      ? []
      : [
          `  operator     POST ${mock.authUrl}/operator/revoke-tokens (the operator key as the bearer token)`,
        ]),
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

function evidenceLines(mock: RunningMock): string[] {
  const status = mock.evidenceStatus();
  if (status === undefined) return [];
  return [
    `  evidence     reported to ${status.url}${status.pending > 0 ? ` (${status.pending} exchange(s) kept from before sent first)` : ''}`,
    status.spool === undefined
      ? '  evidence     held in memory only: a stop loses what is not yet sent (--evidence-spool FILE keeps it)'
      : `  evidence     spooled in ${status.spool.file}`,
    status.fingerprintKey === 'generated'
      ? '  evidence     token fingerprints under a key new at this start (--evidence-fingerprint-key-file keeps one)'
      : '  evidence     token fingerprints under the key of --evidence-fingerprint-key-file',
  ];
}

function registerLines(mock: RunningMock): string[] {
  const status = mock.registerStatus();
  if (status === undefined) return [];
  const floor =
    status.stateFile === undefined
      ? '  register     replay floor in memory only: a restart forgets it (--register-state FILE keeps it)'
      : `  register     replay floor kept in ${status.stateFile}`;
  if (status.lookup === 'partner')
    return [
      `  register     ${status.url}  (JWKS ${status.jwksUrl})`,
      '  register     read one partner at a time, at its token request (each entry kept for its max-age)',
      floor,
    ];
  return [
    `  register     ${status.url}  (JWKS ${status.jwksUrl})`,
    status.state === 'none'
      ? `  register     NOT READ: ${status.lastError ?? 'no copy yet'}; no production token is issued until it is`
      : `  register     ${status.partners} partner(s), issued ${status.issuedAt}, valid until ${status.expiresAt}, seq ${status.seq}`,
    floor,
  ];
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
    mock = await startMock(toMockOptions(options));
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
        ...(mock.registerStatus() === undefined ? {} : { register: mock.registerStatus() }),
        ...(mock.evidenceStatus() === undefined ? {} : { evidence: mock.evidenceStatus() }),
        clients: mock.clients.map(({ partnerId, clientId, clientSecret, authorizedScopes }) => ({
          partnerId,
          clientId,
          clientSecret,
          authorizedScopes,
        })),
      })}\n`,
    );
  } else {
    process.stdout.write(describe(mock, options));
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
