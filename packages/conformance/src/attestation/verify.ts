import { createHash } from 'node:crypto';
import * as z from 'zod';
import { judgeSession } from '../client/judge.js';
import { type ClientSession, parseSession } from '../client/session.js';
import type { ClientReport } from '../common/report.js';
import { UsageError } from '../errors.js';
import type { DsseEnvelope } from './dsse.js';
import type { AttestationPublicKey } from './keys.js';
import { signedBy } from './signed-by.js';
import {
  attestedResult,
  statementType,
  type TestResultStatement,
  testResultPredicateType,
} from './statement.js';

const base64 = z
  .string()
  .max(8 * 1024 * 1024)
  .regex(/^[A-Za-z0-9+/]*={0,2}$/);
const envelopeSchema = z.strictObject({
  payloadType: z.string().max(200),
  payload: base64,
  signatures: z
    .array(z.strictObject({ keyid: z.string().max(200), sig: base64 }))
    .min(1)
    .max(16),
});

/** What `verify` found: the problems (none: it holds), and what was signed. */
export interface Verification {
  ok: boolean;
  problems: string[];
  keyid?: string;
  statement?: TestResultStatement;
  /** Set when a session was given: the verdicts it gives again, and whether they match the statement. */
  rederived?: ReturnType<typeof attestedResult>;
  /**
   * Set only when a session was given and the attestation holds for it (a verified signature, its SHA-256
   * the statement's subject, the same verdicts again): the report it gives, marked attested
   * (`provenance.attested: true`).
   */
  report?: ClientReport;
  /** The session the report was derived from (for the HTML report's timeline). */
  session?: ClientSession;
}

/** Reads an envelope: JSON of the DSSE shape, or a refusal that says what it is not. */
export function parseEnvelope(text: string): DsseEnvelope {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UsageError(
      'the attestation is not JSON: expected a DSSE envelope { payloadType, payload, signatures }',
    );
  }
  const checked = envelopeSchema.safeParse(value);
  if (!checked.success)
    throw new UsageError(
      `the attestation is not a DSSE envelope (${checked.error.issues[0]!.path.join('.') || 'top level'}: ${checked.error.issues[0]!.message})`,
    );
  return checked.data;
}

const sameList = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().every((item, index) => item === [...b].sort()[index]);

/**
 * Verifies an attestation: a signature by one of `keys` over the DSSE pre-authentication encoding,
 * an in-toto Statement v1 with the test-result predicate, and — given the session's bytes — that they
 * are the subject and that judging them again gives the same result and the same check lists.
 */
export function verifyAttestation(
  envelope: DsseEnvelope,
  keys: readonly AttestationPublicKey[],
  sessionBytes?: Buffer,
  options: { sessionFile?: string } = {},
): Verification {
  const opened = signedBy(envelope, keys, 'attestation');
  if (opened.ok === false) return opened;
  const { problems } = opened;
  const statement = opened.payload as TestResultStatement;
  if (statement?._type !== statementType)
    problems.push(`the payload is not an in-toto Statement v1 (${statementType})`);
  if (statement?.predicateType !== testResultPredicateType)
    problems.push(`the predicate is not a test result (${testResultPredicateType})`);
  const result: Verification = { ok: false, problems, keyid: opened.keyid, statement };
  if (sessionBytes !== undefined && problems.length === 0) {
    const digest = createHash('sha256').update(sessionBytes).digest('hex');
    const subject = statement.subject?.[0]?.digest?.sha256;
    if (digest !== subject)
      problems.push(
        `the session's SHA-256 is ${digest}, the attested subject's ${String(subject)}: not the session attested`,
      );
    else {
      const session = parseSession(sessionBytes.toString('utf8'), 'the session');
      const judged = statement.predicate.configuration.find((item) => item.name === 'judge-options')
        ?.annotations as { certify?: boolean; checks?: string[] } | undefined;
      // Only here — the signature verified and these are the bytes it signed — is the report attested.
      const report = judgeSession(session, {
        certify: judged?.certify === true,
        ...(judged?.checks && { only: judged.checks }),
        provenance: {
          source: 'rejudged',
          sessionSha256: digest,
          ...(options.sessionFile !== undefined && { sessionFile: options.sessionFile }),
          attested: true,
        },
      });
      result.report = report;
      result.session = session;
      const again = attestedResult(report);
      result.rederived = again;
      const claimed = statement.predicate;
      if (again.result !== claimed.result)
        problems.push(`the session judges ${again.result}, the attestation says ${claimed.result}`);
      for (const list of ['passedTests', 'warnedTests', 'failedTests'] as const)
        if (!sameList(again[list], claimed[list] ?? []))
          problems.push(
            `${list}: the session gives ${again[list].join(', ') || 'none'}, the attestation says ${(claimed[list] ?? []).join(', ') || 'none'}`,
          );
    }
  }
  result.ok = problems.length === 0;
  if (!result.ok) {
    delete result.report;
    delete result.session;
  }
  return result;
}
