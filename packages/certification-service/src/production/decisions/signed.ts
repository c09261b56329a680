import { writeAudit } from '../../audit.js';
import type { Database, Queryable } from '../../db/database.js';
import { InternalError } from '../../errors.js';
import type { SigningKey } from '../../keys.js';
import { eventOfDecision } from '../../outbox/events.js';
import { enqueueEvent } from '../../outbox/outbox.js';
import { type DecisionInput, type DecisionValue, recordDecision } from './decisions.js';
import { signDecision } from './statement.js';

/** What a signed decision needs besides the transaction: the key that signs it. */
export interface ProductionDeps {
  key: Pick<SigningKey, 'privateKey' | 'kid'>;
}

interface StoredDecision {
  id: string;
  partner_id: string;
  partner_name: string;
  run_id: string;
  decision: DecisionValue;
  note: string;
  scopes: string[] | null;
  valid_until: string | Date | null;
  created_at: string | Date;
  reviewer_name: string | null;
  attestation: string | null;
}

/**
 * Records a decision with everything that goes with it, in the caller's transaction: the decision row
 * (recordDecision), its signed statement, the webhook event in the outbox, and an audit line. All commit
 * together or none does. Returns the decision's id and the event's id.
 */
export async function recordSignedDecision(
  tx: Queryable,
  input: DecisionInput,
  deps: ProductionDeps,
  /** What the webhook says beyond the row: the scopes and end of the approval a revocation or expiry ends. */
  announce: { scopes?: string[]; validUntil?: Date | null } = {},
): Promise<{ decisionId: string; eventId: string | undefined }> {
  const recorded = await recordDecision(tx, input);
  const [row] = await tx.query<StoredDecision>(
    `SELECT d.id, d.partner_id, p.name AS partner_name, d.run_id, d.decision, d.note, d.scopes, d.valid_until,
       d.created_at, rv.name AS reviewer_name, r.attestation
     FROM decisions d JOIN partners p ON p.id = d.partner_id JOIN runs r ON r.id = d.run_id
     LEFT JOIN reviewers rv ON rv.id = d.reviewer_id
     WHERE d.id = $1`,
    [recorded.id],
  );
  if (!row) throw new InternalError(`the decision ${String(recorded.id)} just recorded cannot be read back`);
  if (row.attestation === null)
    throw new InternalError(`run ${row.run_id} has no attestation: a decision must rest on an attested run`);
  const decisionId = String(row.id);
  const scopes = [...(row.scopes ?? [])];
  const validUntil = row.valid_until === null ? null : new Date(row.valid_until);
  const envelope = signDecision(
    {
      partnerId: row.partner_id,
      partnerName: row.partner_name,
      runId: row.run_id,
      decision: row.decision,
      scopes,
      reviewerName: row.reviewer_name,
      at: new Date(row.created_at),
      validUntil,
      note: row.note,
      attestation: row.attestation,
    },
    deps.key,
  );
  await tx.query('INSERT INTO decision_statements (decision_id, envelope) VALUES ($1, $2)', [
    decisionId,
    `${JSON.stringify(envelope, null, 2)}\n`,
  ]);
  const eventId = await enqueueEvent(tx, {
    type: eventOfDecision[row.decision],
    at: new Date(row.created_at),
    data: {
      partnerId: row.partner_id,
      runId: row.run_id,
      decisionId,
      scopes: announce.scopes ?? scopes,
      validUntil:
        (announce.validUntil === undefined ? validUntil : announce.validUntil)?.toISOString() ?? null,
    },
  });
  await writeAudit(tx, {
    actor: input.reviewerId ? `reviewer:${input.reviewerId}` : 'system',
    action: 'decision.signed',
    subject: row.partner_id,
    detail: { decision: row.decision, decisionId, run: row.run_id, event: eventId ?? null },
  });
  return { decisionId, eventId };
}

/**
 * A partner's standing approval: its latest approval, unless revoked or expired since. A suspension
 * holds an approval without ending it (the register says `suspended`): it can still be revoked, and it
 * still expires.
 */
export async function standingApproval(
  db: Queryable,
  partnerId: string,
): Promise<{ id: string; run_id: string; scopes: string[]; valid_until: string | Date | null } | undefined> {
  const [row] = await db.query<{
    id: string;
    run_id: string;
    decision: string;
    scopes: string[];
    valid_until: string | Date | null;
  }>(
    `SELECT id, run_id, decision, scopes, valid_until FROM decisions
     WHERE partner_id = $1 AND decision IN ('approved', 'revoked', 'expired')
     ORDER BY created_at DESC, id DESC LIMIT 1`,
    [partnerId],
  );
  return row?.decision === 'approved' ? row : undefined;
}

/**
 * Revokes a partner's standing approval: a `revoked` decision on the run the approval rested on.
 * Returns undefined when there is nothing to revoke.
 */
export async function revokeApproval(
  db: Database,
  input: { partnerId: string; reviewerId: string; note: string },
  deps: ProductionDeps,
): Promise<{ decisionId: string } | undefined> {
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`decision:${input.partnerId}`]);
    const approval = await standingApproval(tx, input.partnerId);
    if (!approval) return undefined;
    const { decisionId } = await recordSignedDecision(
      tx,
      {
        partnerId: input.partnerId,
        runId: approval.run_id,
        reviewerId: input.reviewerId,
        decision: 'revoked',
        note: input.note,
        scopes: [],
        validUntil: null,
      },
      deps,
      { scopes: [...approval.scopes], validUntil: null },
    );
    return { decisionId };
  });
}

/**
 * The expiry sweep, run by every instance now and then: an approval past its `validUntil` gets an
 * `expired` decision (once: the partner's lock and a second look keep two instances from both recording
 * it), and an approval within `noticeDays` of it an `approval.expiring` event (once per approval).
 * Returns the number of expiries recorded.
 */
export async function sweepApprovals(
  db: Database,
  deps: ProductionDeps & { noticeDays: number },
): Promise<{ expired: number; noticed: number }> {
  const due = await db.query<{ partner_id: string; id: string; valid_until: string | Date }>(
    `SELECT * FROM (
       SELECT DISTINCT ON (partner_id) partner_id, id, decision, valid_until FROM decisions
       WHERE decision IN ('approved', 'revoked', 'expired') ORDER BY partner_id, created_at DESC, id DESC) latest
     WHERE decision = 'approved' AND valid_until IS NOT NULL AND valid_until <= now() + make_interval(days => $1)`,
    [deps.noticeDays],
  );
  let expired = 0;
  let noticed = 0;
  for (const candidate of due) {
    await db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`decision:${candidate.partner_id}`]);
      const approval = await standingApproval(tx, candidate.partner_id);
      if (!approval || String(approval.id) !== String(candidate.id) || approval.valid_until === null) return;
      const validUntil = new Date(approval.valid_until);
      if (validUntil.getTime() <= Date.now()) {
        await recordSignedDecision(
          tx,
          {
            partnerId: candidate.partner_id,
            runId: approval.run_id,
            reviewerId: null,
            decision: 'expired',
            note: `the approval ${String(approval.id)} reached its validUntil (${validUntil.toISOString()})`,
            scopes: [],
            validUntil: null,
          },
          deps,
          { scopes: [...approval.scopes], validUntil },
        );
        expired += 1;
      } else {
        const eventId = await enqueueEvent(tx, {
          type: 'approval.expiring',
          dedupeKey: `expiring:${String(approval.id)}`,
          data: {
            partnerId: candidate.partner_id,
            runId: approval.run_id,
            decisionId: String(approval.id),
            scopes: [...approval.scopes],
            validUntil: validUntil.toISOString(),
          },
        });
        if (eventId) {
          noticed += 1;
          await writeAudit(tx, {
            actor: 'system',
            action: 'approval.expiring',
            subject: candidate.partner_id,
            detail: { decisionId: String(approval.id), validUntil, event: eventId },
          });
        }
      }
    });
  }
  return { expired, noticed };
}
