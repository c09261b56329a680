import {
  claimedPredicateType,
  decisionPredicateType,
  payloadProblem,
  verifyDecision,
} from '../attestation/decision.js';
import type { DsseEnvelope } from '../attestation/dsse.js';
import { type AttestationPublicKey, keysOf } from '../attestation/keys.js';
import { parseEnvelope, type Verification, verifyAttestation } from '../attestation/verify.js';
import { isLoopbackHost } from '../common/loopback.js';
import { readRegularFile } from '../common/regular-file.js';
import { attestationOf } from '../common/report.js';
import { terminalSafe } from '../common/terminal.js';
import { ConformanceError, exitCodeForError, usageError } from '../errors.js';
import { formatClientHtmlReport } from '../reporters/html/client.js';
import { formatJsonReport } from '../reporters/json.js';
import { formatJunitReport } from '../reporters/junit.js';
import { type CliIo, parseFlags, reportPath, writeReports } from './io.js';

export const verifyUsageText = `Usage: partner-conformance verify ATTESTATION_FILE --keys URL|FILE [--session FILE] [--require-pass]
                                  [--report-json FILE] [--report-junit FILE] [--report-html FILE]
       partner-conformance verify DECISION_FILE --keys URL|FILE [--attestation FILE]

Checks an attestation of the certification service offline: its DSSE signature by one of the keys (a
JWKS: the service's /.well-known/jwks.json, or a saved copy), that it states an in-toto test result, and,
with --session, that the session file is the one attested (SHA-256) and that judging it again gives the
same result and the same passed, warned and failed checks. It prints whose run it is (partner, integration,
plan, service) when the service named them. The report judged again is marked attested ("attested: its
signature was verified") only when the signature verifies and the session's SHA-256 is the attested
subject; a session judged with \`client --judge\` stays "self-recorded, not attested".

Given a decision of the service (approved, rejected, revoked, expired) instead, it checks its signature
and prints the partner, the decision, the scopes and validUntil; with --attestation, that the decision
rests on that attestation file (its SHA-256 is the decision's subject).

  --keys URL|FILE       the service's key set (required)
  --session FILE        an attestation only: the session served with it, judged again (default: not judged)
  --require-pass        an attestation only: exit 1 unless the attested result passed (PASSED or WARNED) (default off)
  --report-json FILE, --report-junit FILE, --report-html FILE
                        an attestation with --session only: write the report judged again, marked attested
                        (default: none written; nothing is written when the attestation does not hold for it)
  --attestation FILE    a decision only: the attestation it must rest on (default: not checked)

Exit: 0 it holds (and, with --require-pass, the run passed), 1 it does not (each problem is printed),
2 usage (a missing or unreadable file).
`;

const flags = {
  keys: { type: 'string' },
  session: { type: 'string' },
  attestation: { type: 'string' },
  'require-pass': { type: 'boolean' },
  'report-json': { type: 'string' },
  'report-junit': { type: 'string' },
  'report-html': { type: 'string' },
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

type Values = ReturnType<typeof parseFlags<typeof flags>>['values'];

/** A signed statement to verify: its file, its envelope and the keys it must be signed by. */
interface Signed {
  file: string;
  envelope: DsseEnvelope;
  keys: AttestationPublicKey[];
}

/** `partner-conformance verify …`: returns 0 when the attestation holds, 1 when not, 2 on usage errors. */
export async function verifyMain(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    return await verify(argv, io);
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

/** Reads the flags and the signed file, then verifies it as the decision or the attestation it is. */
async function verify(argv: readonly string[], io: CliIo): Promise<number> {
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
  const signed = await readSigned(positionals[0]!, values.keys);
  // A payload that does not read cannot say whether it is an attestation or a decision: say what is wrong.
  const unreadable = payloadProblem(signed.envelope);
  if (unreadable !== undefined) {
    io.stdout.write(
      `${terminalSafe(`${signed.file} does NOT hold: ${unreadable}. A signed statement's payload is JSON (an attestation or a decision): this one was changed or damaged after it was signed; fetch it again from the certification service`)}\n`,
    );
    return 1;
  }
  return claimedPredicateType(signed.envelope) === decisionPredicateType
    ? await verifyDecisionFile(signed, values, io)
    : await verifyAttestationFile(signed, values, io);
}

/** The signed file's envelope and the key set (a file or an address); what does not read is a usage error. */
async function readSigned(file: string, keysAt: string): Promise<Signed> {
  const envelopeText = (await readRegularFile(file, 16 * maxSmallBytes, 'attestation')).toString('utf8');
  try {
    const envelope = parseEnvelope(envelopeText);
    return { file, envelope, keys: keysOf(await loadKeys(keysAt)) };
  } catch (error) {
    if (error instanceof ConformanceError) throw error;
    throw usageError((error as Error).message);
  }
}

/** A decision: its signature and, with --attestation, the attestation it rests on; what it says, printed. */
async function verifyDecisionFile(
  { file, envelope, keys }: Signed,
  values: Values,
  io: CliIo,
): Promise<number> {
  for (const flag of ['session', 'require-pass', 'report-json', 'report-junit', 'report-html'] as const)
    if (values[flag] !== undefined)
      throw usageError(`--${flag} is for an attestation; ${file} is a decision (give --attestation FILE)`);
  const attestation =
    values.attestation === undefined
      ? undefined
      : await readRegularFile(values.attestation, 16 * maxSmallBytes, 'attestation');
  const decided = verifyDecision(envelope, keys, attestation);
  const p = decided.statement?.predicate;
  const lines =
    decided.ok && p
      ? [
          `decision holds: signed by ${decided.keyid}`,
          `partner ${p.partner.id} ${p.partner.name}`,
          `decision ${p.decision} on run ${p.runId} at ${p.at}${p.reviewer?.name ? ` by ${p.reviewer.name}` : ''}`,
          `scopes ${p.scopes.join(' ') || '(none)'}`,
          `validUntil ${p.validUntil ?? '(none)'}`,
          ...(p.note ? [`note ${p.note.slice(0, 500)}`] : []),
          `attestation SHA-256 ${decided.statement?.subject[0]?.digest.sha256}${attestation ? ': the attestation given' : ' (give --attestation to check it is the one given)'}`,
        ]
      : ['decision does NOT hold:', ...decided.problems.map((problem) => `  - ${problem}`)];
  io.stdout.write(`${lines.map(terminalSafe).join('\n')}\n`);
  return decided.ok ? 0 : 1;
}

/**
 * An attestation: its signature, and with --session the session judged again (its reports written when
 * it holds for it); with --require-pass, the attested result must have passed.
 */
async function verifyAttestationFile(
  { file, envelope, keys }: Signed,
  values: Values,
  io: CliIo,
): Promise<number> {
  if (values.attestation !== undefined)
    throw usageError(`--attestation is for a decision; ${file} is an attestation (give --session FILE)`);
  const reports = {
    json: reportPath('report-json', values['report-json']),
    junit: reportPath('report-junit', values['report-junit']),
    html: reportPath('report-html', values['report-html']),
  };
  const wantsReports = Object.values(reports).some((path) => path !== undefined);
  if (values.session === undefined && wantsReports)
    throw usageError(
      '--report-json, --report-junit and --report-html write the report of the session judged again: give --session FILE',
    );
  const session =
    values.session === undefined
      ? undefined
      : await readRegularFile(values.session, 100 * maxSmallBytes, 'session');
  const result = verifyAttestation(
    envelope,
    keys,
    session,
    values.session === undefined ? {} : { sessionFile: values.session },
  );
  const predicate = result.statement?.predicate;
  const lines = result.ok
    ? attestationLines(result, session !== undefined)
    : ['attestation does NOT hold:', ...result.problems.map((problem) => `  - ${problem}`)];
  const failedRun = result.ok && values['require-pass'] === true && predicate?.result === 'FAILED';
  if (failedRun) lines.push(`--require-pass: the attested run did not pass (result ${predicate?.result})`);
  io.stdout.write(`${lines.map(terminalSafe).join('\n')}\n`);
  const writes: Array<[string, string]> = [];
  if (result.report && result.session) {
    const { report } = result;
    if (reports.json) writes.push([reports.json, formatJsonReport(report)]);
    if (reports.junit) writes.push([reports.junit, formatJunitReport(report)]);
    if (reports.html) writes.push([reports.html, formatClientHtmlReport(report, result.session)]);
  } else if (wantsReports)
    io.stdout.write(
      'no report written: the attestation does not hold for this session (see the problems above)\n',
    );
  await writeReports(writes, io);
  return result.ok && !failedRun ? 0 : 1;
}

/** What an attestation that holds says: its signer, result, session, whose run it is and, judged again, the plan's verdict. */
function attestationLines(result: Verification, withSession: boolean): string[] {
  const predicate = result.statement?.predicate;
  const certification = result.report?.certification;
  return [
    `attestation holds: signed by ${result.keyid}`,
    `result ${predicate?.result}: ${predicate?.passedTests.length} passed, ${predicate?.warnedTests.length} warned (${predicate?.warnedTests.join(', ') || 'none'}), ${predicate?.failedTests.length} failed (${predicate?.failedTests.join(', ') || 'none'})`,
    `session SHA-256 ${result.statement?.subject[0]?.digest?.sha256}${withSession ? ': the session given, judged again to the same verdicts' : ' (give --session to judge it again)'}`,
    ...(result.report ? [`provenance ${attestationOf(result.report.provenance).mark}`] : []),
    predicate?.partner
      ? `partner ${predicate.partner.id} ${predicate.partner.name}`
      : 'partner (not named: the run was not hosted by a service that names its partners)',
    ...(predicate?.integration
      ? [
          `integration ${[predicate.integration.name, predicate.integration.version].filter(Boolean).join(' ')}`,
        ]
      : []),
    ...(predicate?.plan ? [`plan ${predicate.plan.id} sha256:${predicate.plan.digest}`] : []),
    // With the session judged again: what the plan found missing, as the service's notApprovable names it.
    ...(certification
      ? certification.passed
        ? ['certified under the plan: nothing it requires is missing']
        : [
            `not certified under the plan (${certification.reasons.length} reason${certification.reasons.length === 1 ? '' : 's'}):`,
            ...certification.reasons.map((reason) => `  - ${reason}`),
          ]
      : []),
    ...(predicate?.service ? [`service ${predicate.service.url} ${predicate.service.version}`] : []),
  ];
}
