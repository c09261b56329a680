import { createHash } from 'node:crypto';
import { type DsseEnvelope, signEnvelope } from '@partner-lending/conformance';
import type { Exchange } from '../evidence/exchange.js';
import type { SigningKey } from '../keys.js';
import { statementType } from '../production/decisions/statement.js';

/** The predicate type of a regression: a decisive plan check failing on a partner's production evidence. */
export const regressionPredicateType = 'https://partner-lending.dev/certification-regression/v1';

/** What the service did about a regression. */
export type RegressionPolicy = 'notify' | 'suspend';
/**
 * `suspended`: the partner was active and the policy `suspend`; `notified`: it was active and the policy
 * `notify`; `unchanged`: it was not active (never approved, revoked, expired or already suspended).
 */
export type RegressionConsequence = 'notified' | 'suspended' | 'unchanged';

/** What a regression statement says. */
export interface RegressionPredicate {
  regressionId: string;
  partner: { id: string; name: string };
  /** The plan check that failed on production. */
  check: string;
  detail: string;
  /** When the judge found it. */
  at: string;
  /** The evidence window judged. */
  window: { from: string; to: string };
  /** The exchanges that show it (at most 20; fingerprints, never a token). */
  exchanges: Exchange[];
  policy: RegressionPolicy;
  consequence: RegressionConsequence;
  /** The decision that suspended the partner, under `suspend`; null otherwise. */
  suspensionId: string | null;
  /** The run the partner's approval rests on (its attestation is the subject); null when never approved. */
  runId: string | null;
  /** The plan that run followed; null without one. */
  plan: { id: string; digest: string } | null;
  recordedAt: string;
}

export interface RegressionStatement {
  _type: typeof statementType;
  subject: [{ name: string; digest: { sha256: string } }];
  predicateType: typeof regressionPredicateType;
  predicate: RegressionPredicate;
}

/**
 * The in-toto Statement of a regression. Its subject is the partner's certification: the attestation of
 * the run its approval rests on (`partner/<id>/<runId>.attestation.json` and the SHA-256 of the file's
 * bytes), so that the statement cannot be moved onto another partner or another certification. A
 * partner never approved has no attestation: the subject is then the evidence itself
 * (`partner/<id>/evidence`, the SHA-256 of the predicate's exchanges as JSON).
 */
export function regressionStatement(
  predicate: RegressionPredicate,
  attestation: string | Buffer | null,
): RegressionStatement {
  const subject =
    attestation !== null && predicate.runId !== null
      ? {
          name: `partner/${predicate.partner.id}/${predicate.runId}.attestation.json`,
          digest: { sha256: createHash('sha256').update(attestation).digest('hex') },
        }
      : {
          name: `partner/${predicate.partner.id}/evidence`,
          digest: {
            sha256: createHash('sha256').update(JSON.stringify(predicate.exchanges)).digest('hex'),
          },
        };
  return {
    _type: statementType,
    subject: [subject],
    predicateType: regressionPredicateType,
    predicate,
  };
}

/** The regression's DSSE envelope, signed with the attestation key (the service's JWKS verifies it). */
export function signRegression(
  statement: RegressionStatement,
  key: Pick<SigningKey, 'privateKey' | 'kid'>,
): DsseEnvelope {
  return signEnvelope(Buffer.from(JSON.stringify(statement), 'utf8'), key.privateKey, key.kid);
}
