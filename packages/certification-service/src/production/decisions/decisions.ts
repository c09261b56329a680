import type { Queryable } from '../../db/database.js';
import { ServiceError } from '../../errors.js';
import { newId } from '../../secrets.js';

/** What a decision says of a partner for production. */
export type DecisionValue = 'approved' | 'rejected' | 'revoked' | 'expired' | 'suspended';
export const decisionValues: readonly DecisionValue[] = [
  'approved',
  'rejected',
  'revoked',
  'expired',
  'suspended',
];

export interface DecisionInput {
  partnerId: string;
  runId: string;
  /**
   * The reviewer who decided; null for a decision of the service itself (an approval that expired, a
   * suspension on a regression).
   */
  reviewerId: string | null;
  decision: DecisionValue;
  note: string;
  /** The production scopes approved (what the run certified); [] for anything but an approval. */
  scopes: string[];
  /** Until when an approval holds; null for anything but an approval. */
  validUntil: Date | null;
}

/** A decision as stored. */
export interface DecisionRow {
  id: string;
  partnerId: string;
  runId: string;
  reviewerId: string | null;
  decision: DecisionValue;
  note: string;
  scopes: string[];
  validUntil: string | null;
  at: string;
}

/** A decision the run's decisions so far make pointless: the same decision again, without a reversal between. */
export class DecisionRefusal extends ServiceError {
  constructor(
    message: string,
    readonly previous: DecisionRow,
  ) {
    super('ERR_DECISION_REFUSED', message);
    this.name = 'DecisionRefusal';
  }
}

interface StoredDecision {
  id: string;
  partner_id: string;
  run_id: string;
  reviewer_id: string | null;
  decision: DecisionValue;
  note: string;
  scopes: string[];
  valid_until: Date | string | null;
  created_at: Date | string;
}

const iso = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString());

const rowOf = (stored: StoredDecision): DecisionRow => ({
  id: stored.id,
  partnerId: stored.partner_id,
  runId: stored.run_id,
  reviewerId: stored.reviewer_id,
  decision: stored.decision,
  note: stored.note,
  scopes: stored.scopes,
  validUntil: iso(stored.valid_until),
  at: iso(stored.created_at)!,
});

/** The latest decision on a run, or undefined. */
export async function latestDecisionOn(db: Queryable, runId: string): Promise<DecisionRow | undefined> {
  const [stored] = await db.query<StoredDecision>(
    'SELECT * FROM decisions WHERE run_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1',
    [runId],
  );
  return stored ? rowOf(stored) : undefined;
}

/**
 * Records a decision, inside the caller's transaction `tx` (so that whatever else the decision entails
 * commits with it, or not at all). The run's row is locked first, so two decisions on one run take turns;
 * the same decision as the run's latest is refused (DecisionRefusal): a decision is recorded again only
 * when it reverses the one before.
 */
export async function recordDecision(tx: Queryable, input: DecisionInput): Promise<DecisionRow> {
  await tx.query('SELECT id FROM runs WHERE id = $1 FOR UPDATE', [input.runId]);
  const previous = await latestDecisionOn(tx, input.runId);
  if (previous?.decision === input.decision)
    throw new DecisionRefusal(
      `this run was already ${input.decision} (${previous.id}, ${previous.at}); a second decision on a run is recorded only when it reverses the one before`,
      previous,
    );
  const [stored] = await tx.query<StoredDecision>(
    `INSERT INTO decisions (id, partner_id, run_id, reviewer_id, decision, note, scopes, valid_until, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, greatest(clock_timestamp(), $9::timestamptz + interval '1 microsecond'))
     RETURNING *`,
    [
      newId('dec'),
      input.partnerId,
      input.runId,
      input.reviewerId,
      input.decision,
      input.note,
      JSON.stringify(input.scopes),
      input.validUntil,
      previous?.at ?? '-infinity',
    ],
  );
  return rowOf(stored!);
}

/** A partner's decisions as the API shows them, newest first. */
export interface PublicDecision {
  id: string;
  runId: string;
  decision: DecisionValue;
  at: string;
  /** Who decided; null for a decision of the service itself. */
  reviewer: { name: string } | null;
  note: string;
  scopes: string[];
  validUntil: string | null;
}

/** Every decision on a partner, newest first (at most `limit`). */
export async function listDecisions(
  db: Queryable,
  partnerId: string,
  limit = 500,
): Promise<PublicDecision[]> {
  const rows = await db.query<StoredDecision & { reviewer_name: string | null }>(
    `SELECT d.*, r.name AS reviewer_name FROM decisions d LEFT JOIN reviewers r ON r.id = d.reviewer_id
     WHERE d.partner_id = $1 ORDER BY d.created_at DESC, d.id DESC LIMIT $2`,
    [partnerId, limit],
  );
  return rows.map((stored) => ({
    id: stored.id,
    runId: stored.run_id,
    decision: stored.decision,
    at: iso(stored.created_at)!,
    reviewer: stored.reviewer_name === null ? null : { name: stored.reviewer_name },
    note: stored.note,
    scopes: stored.scopes,
    validUntil: iso(stored.valid_until),
  }));
}
