import { keysOf } from '../attestation/keys.js';
import { parseEnvelope, verifyAttestation } from '../attestation/verify.js';
import { isLoopbackHost } from '../common/loopback.js';
import { readRegularFile } from '../common/regular-file.js';
import { terminalSafe } from '../common/terminal.js';
import { ConformanceError, exitCodeForError, usageError } from '../errors.js';
import { type CliIo, parseFlags } from './io.js';

export const verifyUsageText = `Usage: partner-conformance verify ATTESTATION_FILE --keys URL|FILE [--session FILE]

Checks an attestation of the certification service offline: its DSSE signature by one of the keys (a
JWKS: the service's /.well-known/jwks.json, or a saved copy), that it states an in-toto test result, and,
with --session, that the session file is the one attested (SHA-256) and that judging it again gives the
same result and the same passed, warned and failed checks.

Exit: 0 it holds, 1 it does not (each problem is printed), 2 usage (a missing or unreadable file).
`;

const flags = {
  keys: { type: 'string' },
  session: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Largest attestation, key set or session read: 100 MiB for a session, 1 MiB for the others. */
const maxSmallBytes = 1024 * 1024;

async function loadKeys(where: string): Promise<unknown> {
  let url: URL | undefined;
  try {
    url = new URL(where);
  } catch {
    url = undefined;
  }
  if (url && /^https?:$/.test(url.protocol)) {
    if (url.protocol === 'http:' && !isLoopbackHost(url.hostname))
      throw usageError(
        `--keys ${url.origin} is plain http: fetch the keys over https (http only on loopback)`,
      );
    let response: Response;
    try {
      response = await fetch(url, { signal: AbortSignal.timeout(10_000), redirect: 'error' });
    } catch (cause) {
      throw usageError(`could not fetch the keys from ${url.href}: ${(cause as Error).message}`);
    }
    const text = await response.text();
    if (!response.ok || text.length > maxSmallBytes)
      throw usageError(
        `the keys at ${url.href} answered ${response.status}${text.length > maxSmallBytes ? ' with over 1 MiB' : ''}`,
      );
    return JSON.parse(text);
  }
  const bytes = await readRegularFile(where, maxSmallBytes, 'key set');
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    throw usageError(`the key set ${where} is not JSON: expected a JWKS { "keys": [...] }`);
  }
}

/** `partner-conformance verify …`: returns 0 when the attestation holds, 1 when not, 2 on usage errors. */
export async function verifyMain(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    const { values, positionals } = parseFlags(argv, flags, 'partner-conformance verify', true);
    if (values.help) {
      io.stdout.write(verifyUsageText);
      return 0;
    }
    if (positionals.length !== 1)
      throw usageError(
        'give one attestation file, e.g. partner-conformance verify attestation.json --keys jwks.json',
      );
    if (values.keys === undefined)
      throw usageError(
        "--keys is needed: the certification service's key set (its /.well-known/jwks.json, or a saved copy)",
      );
    const envelopeText = (await readRegularFile(positionals[0]!, 16 * maxSmallBytes, 'attestation')).toString(
      'utf8',
    );
    let envelope: ReturnType<typeof parseEnvelope>;
    let keys: ReturnType<typeof keysOf>;
    try {
      envelope = parseEnvelope(envelopeText);
      keys = keysOf(await loadKeys(values.keys));
    } catch (error) {
      if (error instanceof ConformanceError) throw error;
      throw usageError((error as Error).message);
    }
    const session =
      values.session === undefined
        ? undefined
        : await readRegularFile(values.session, 100 * maxSmallBytes, 'session');
    const result = verifyAttestation(envelope, keys, session);
    const predicate = result.statement?.predicate;
    const lines = result.ok
      ? [
          `attestation holds: signed by ${result.keyid}`,
          `result ${predicate?.result}: ${predicate?.passedTests.length} passed, ${predicate?.warnedTests.length} warned (${predicate?.warnedTests.join(', ') || 'none'}), ${predicate?.failedTests.length} failed (${predicate?.failedTests.join(', ') || 'none'})`,
          `session SHA-256 ${result.statement?.subject[0]?.digest?.sha256}${session ? ': the session given, judged again to the same verdicts' : ' (give --session to judge it again)'}`,
        ]
      : ['attestation does NOT hold:', ...result.problems.map((problem) => `  - ${problem}`)];
    io.stdout.write(`${lines.map(terminalSafe).join('\n')}\n`);
    return result.ok ? 0 : 1;
  } catch (error) {
    if (error instanceof ConformanceError) {
      io.stderr.write(`partner-conformance verify: ${terminalSafe(error.message)}\n`);
      return exitCodeForError(error);
    }
    io.stderr.write(
      `partner-conformance verify: internal error: ${terminalSafe(error instanceof Error ? error.message : String(error))}\n`,
    );
    return 1;
  }
}
