import { createHash } from 'node:crypto';
import type { DsseEnvelope } from './dsse.js';
import type { AttestationPublicKey } from './keys.js';
import { signedBy } from './signed-by.js';
import { statementType } from './statement.js';

/** The predicate type of a certification decision statement. */
export const decisionPredicateType = 'https://partner-lending.dev/certification-decision/v1';

/** What a decision statement says: who was decided on, what, by whom, until when, on which run. */
export interface DecisionPredicate {
  partner: { id: string; name: string };
  decision: 'approved' | 'rejected' | 'revoked' | 'expired' | 'suspended';
  scopes: string[];
  reviewer: { name: string } | null;
  at: string;
  validUntil: string | null;
  note: string;
  runId: string;
}

/** An in-toto Statement v1 of a decision: its subject is the attestation of the run it rests on. */
export interface DecisionStatement {
  _type: typeof statementType;
  subject: Array<{ name: string; digest: { sha256: string } }>;
  predicateType: typeof decisionPredicateType;
  predicate: DecisionPredicate;
}

/** What verifying a decision found: the problems (none: it holds) and what was signed. */
export interface DecisionVerification {
  ok: boolean;
  problems: string[];
  keyid?: string;
  statement?: DecisionStatement;
}

const isText = (value: unknown, max: number) => typeof value === 'string' && value.length <= max;

/** What is wrong with a decision statement's shape (empty: it is one). */
function shapeProblems(value: unknown): string[] {
  const statement = value as Partial<DecisionStatement> | null;
  if (typeof statement !== 'object' || statement === null) return ['the signed payload is not a JSON object'];
  const problems: string[] = [];
  if (statement._type !== statementType)
    problems.push(`the payload is not an in-toto Statement v1 (${statementType})`);
  if (statement.predicateType !== decisionPredicateType)
    problems.push(`the predicate is not a certification decision (${decisionPredicateType})`);
  const subject = statement.subject?.[0];
  if (
    !Array.isArray(statement.subject) ||
    statement.subject.length !== 1 ||
    !/^[0-9a-f]{64}$/.test(String(subject?.digest?.sha256))
  )
    problems.push('the subject is not one attestation with its SHA-256');
  const p = statement.predicate as Partial<DecisionPredicate> | undefined;
  if (
    !p ||
    !isText(p.partner?.id, 200) ||
    !isText(p.partner?.name, 200) ||
    !['approved', 'rejected', 'revoked', 'expired', 'suspended'].includes(String(p.decision)) ||
    !Array.isArray(p.scopes) ||
    p.scopes.length > 16 ||
    !p.scopes.every((scope) => isText(scope, 100)) ||
    !isText(p.at, 40) ||
    !(p.validUntil === null || p.validUntil === undefined || isText(p.validUntil, 40)) ||
    !isText(p.runId, 200)
  )
    problems.push(
      'the predicate is not a decision: partner {id, name}, decision, scopes, at, validUntil and runId are needed',
    );
  return problems;
}

/**
 * Verifies a decision statement of the certification service: a signature by one of `keys`, an
 * in-toto Statement v1 with the decision predicate, and — given the attestation's bytes — that its
 * subject is that attestation (SHA-256 of the file's bytes).
 */
export function verifyDecision(
  envelope: DsseEnvelope,
  keys: readonly AttestationPublicKey[],
  attestationBytes?: Buffer,
): DecisionVerification {
  const opened = signedBy(envelope, keys, 'decision');
  if (opened.ok === false) return opened;
  const { problems, keyid, payload } = opened;
  problems.push(...shapeProblems(payload));
  const statement = payload as DecisionStatement;
  if (attestationBytes !== undefined && problems.length === 0) {
    const digest = createHash('sha256').update(attestationBytes).digest('hex');
    const subject = statement.subject[0]!.digest.sha256;
    if (digest !== subject)
      problems.push(
        `the attestation's SHA-256 is ${digest}, the decision's subject ${subject}: not the attestation this decision rests on`,
      );
  }
  return {
    ok: problems.length === 0,
    problems,
    keyid,
    ...(problems.length === 0 && { statement }),
  };
}

/**
 * What makes the envelope's payload unreadable as a statement — not JSON, or JSON but not an object —
 * or undefined when it reads. A payload changed after signing shows here before any signature check.
 */
export function payloadProblem(envelope: DsseEnvelope): string | undefined {
  const text = Buffer.from(envelope.payload, 'base64').toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return `its payload does not parse as JSON (${(error as Error).message.slice(0, 120)})`;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return 'its payload is JSON but not an object (a statement is a JSON object)';
  return undefined;
}

/**
 * The predicate type the envelope's payload claims, read without verifying anything (to pick how to
 * verify it); undefined when the payload does not say (see {@link payloadProblem} for why).
 */
export function claimedPredicateType(envelope: DsseEnvelope): string | undefined {
  try {
    const value = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')) as {
      predicateType?: unknown;
    };
    return typeof value?.predicateType === 'string' ? value.predicateType : undefined;
  } catch {
    return undefined;
  }
}
