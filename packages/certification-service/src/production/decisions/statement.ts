import { createHash } from 'node:crypto';
import {
  type DsseEnvelope,
  decisionPredicateType,
  signEnvelope,
  type DecisionPredicate as VerifiedPredicate,
  type DecisionStatement as VerifiedStatement,
} from '@partner-lending/conformance';
import type { SigningKey } from '../../keys.js';
import type { DecisionValue } from './decisions.js';

/** The in-toto Statement v1 type. */
export const statementType = 'https://in-toto.io/Statement/v1';
/** The predicate type of a certification decision: the one `partner-conformance verify` expects. */
export { decisionPredicateType };

/** The reviewer name a decision the service takes itself (an expiry) is signed with. */
export const systemReviewerName = 'certification service (automatic expiry)';
/** The reviewer name of a suspension, which the service records on a regression (`--on-regression suspend`). */
export const suspensionReviewerName = 'certification service (automatic suspension on a regression)';

/**
 * What a decision statement says: what `partner-conformance verify` reads (its types), narrowed to what
 * the service always signs (a reviewer's name, one subject), and with the service's own `suspended`.
 */
export interface DecisionPredicate extends Omit<VerifiedPredicate, 'decision'> {
  decision: DecisionValue;
  reviewer: { name: string };
}

export interface DecisionStatement extends Omit<VerifiedStatement, 'predicate'> {
  subject: [{ name: string; digest: { sha256: string } }];
  predicate: DecisionPredicate;
}

/** A decision as it is signed: the row's values, the partner's and reviewer's names, the attestation's bytes. */
export interface DecisionToSign {
  partnerId: string;
  partnerName: string;
  runId: string;
  decision: DecisionValue;
  scopes: readonly string[];
  reviewerName: string | null;
  at: Date;
  validUntil: Date | null;
  note: string;
  /** The run's attestation file exactly as it is downloaded (its SHA-256 is the subject). */
  attestation: string | Buffer;
}

/**
 * The in-toto Statement of a decision: its subject is the attestation of the run the decision rests on
 * (`<runId>.attestation.json` and the SHA-256 of its bytes), so that a decision cannot be moved onto
 * another run's result.
 */
export function decisionStatement(input: DecisionToSign): DecisionStatement {
  return {
    _type: statementType,
    subject: [
      {
        name: `${input.runId}.attestation.json`,
        digest: { sha256: createHash('sha256').update(input.attestation).digest('hex') },
      },
    ],
    predicateType: decisionPredicateType,
    predicate: {
      partner: { id: input.partnerId, name: input.partnerName },
      decision: input.decision,
      scopes: [...input.scopes],
      reviewer: {
        name:
          input.reviewerName ??
          (input.decision === 'suspended' ? suspensionReviewerName : systemReviewerName),
      },
      at: input.at.toISOString(),
      validUntil: input.validUntil ? input.validUntil.toISOString() : null,
      note: input.note,
      runId: input.runId,
    },
  };
}

/** The decision's DSSE envelope, signed with the attestation key (the same JWKS verifies both). */
export function signDecision(
  input: DecisionToSign,
  key: Pick<SigningKey, 'privateKey' | 'kid'>,
): DsseEnvelope {
  return signEnvelope(Buffer.from(JSON.stringify(decisionStatement(input)), 'utf8'), key.privateKey, key.kid);
}
