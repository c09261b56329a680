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

/**
 * The first SIGINT or SIGTERM, watched from the moment this is called: `done` resolves on it (its handlers
 * removed, so a second signal ends the process as usual), `heard()` says whether it came, `release()`
 * removes the handlers without one.
 */
function stopSignal(): { done: Promise<void>; heard(): boolean; release(): void } {
  let heard = false;
  let release = () => {};
  const done = new Promise<void>((resolve) => {
    const stop = () => {
      heard = true;
      release();
      resolve();
    };
    release = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  return { done, heard: () => heard, release };
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
  // Heard from before the start: a supervisor may signal as soon as it reads the first line (or before),
  // and a signal with no handler yet would end the process by the signal, not by a clean stop.
  const stopped = stopSignal();
  let mock: RunningMock;
  try {
    mock = await startMock(toMockOptions(options));
  } catch (error) {
    stopped.release();
    process.stderr.write(`partner-mock: ${(error as Error).message}\n`);
    return 1;
  }
  if (stopped.heard()) {
    // Stopped while starting: nothing was announced, so nothing is served.
    await mock.close();
    return 0;
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
  await stopped.done;
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
