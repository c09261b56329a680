import { writeAudit } from '../../audit.js';
import type { Queryable } from '../../db/database.js';
import { enqueueEvent } from '../../outbox/outbox.js';
import { type ProductionDeps, recordSignedDecision, standingApproval } from './signed.js';

/** The audit actor of what the service decides itself on a regression. */
export const serviceActor = 'service';

/** The partner's latest approval, revocation, expiry or suspension: `suspended` when it is a suspension. */
export async function suspensionOf(
  db: Queryable,
  partnerId: string,
): Promise<{ id: string; run_id: string } | undefined> {
  const [row] = await db.query<{ id: string; run_id: string; decision: string }>(
    `SELECT id, run_id, decision FROM decisions
     WHERE partner_id = $1 AND decision IN ('approved', 'revoked', 'expired', 'suspended')
     ORDER BY created_at DESC, id DESC LIMIT 1`,
    [partnerId],
  );
  return row?.decision === 'suspended' ? row : undefined;
}

/**
 * Suspends a partner's standing approval, in the caller's transaction (which holds the partner's
 * decision lock): a `suspended` decision of the service (no reviewer) on the run the approval rests on,
 * signed, announced as `partner.suspended` (with the scopes and end of the approval it holds) and
 * audited. Returns undefined when there is no standing approval to suspend.
 */
export async function suspendApproval(
  tx: Queryable,
  input: { partnerId: string; note: string; regressionId: string },
  deps: ProductionDeps,
): Promise<{ decisionId: string; runId: string } | undefined> {
  const approval = await standingApproval(tx, input.partnerId);
  if (!approval) return undefined;
  const { decisionId, eventId } = await recordSignedDecision(
    tx,
    {
      partnerId: input.partnerId,
      runId: approval.run_id,
      reviewerId: null,
      decision: 'suspended',
      note: input.note,
      scopes: [],
      validUntil: null,
    },
    deps,
    {
      scopes: [...approval.scopes],
      validUntil: approval.valid_until === null ? null : new Date(approval.valid_until),
    },
  );
  await writeAudit(tx, {
    actor: serviceActor,
    action: 'partner.suspended',
    subject: input.partnerId,
    detail: {
      decision: decisionId,
      approval: String(approval.id),
      run: approval.run_id,
      regression: input.regressionId,
      event: eventId ?? null,
    },
  });
  return { decisionId, runId: approval.run_id };
}

/**
 * What a new approval does beyond itself, in its transaction: the partner's regressions recorded before
 * it are settled by it (`resolved_at`), and a partner the service had suspended is reinstated — a
 * `partner.reinstated` event (besides the approval's own) and an audit line. `suspension` is what
 * `suspensionOf` said before the approval was recorded.
 */
export async function settleByApproval(
  tx: Queryable,
  input: {
    partnerId: string;
    runId: string;
    decisionId: string;
    actor: string;
    suspension: { id: string } | undefined;
    scopes: readonly string[];
    validUntil: Date | null;
  },
): Promise<void> {
  await tx.query(
    'UPDATE regressions SET resolved_at = now(), resolved_by = $2 WHERE partner_id = $1 AND resolved_at IS NULL',
    [input.partnerId, input.decisionId],
  );
  if (!input.suspension) return;
  const eventId = await enqueueEvent(tx, {
    type: 'partner.reinstated',
    data: {
      partnerId: input.partnerId,
      runId: input.runId,
      decisionId: input.decisionId,
      suspensionId: String(input.suspension.id),
      scopes: [...input.scopes],
      validUntil: input.validUntil?.toISOString() ?? null,
    },
  });
  await writeAudit(tx, {
    actor: input.actor,
    action: 'partner.reinstated',
    subject: input.partnerId,
    detail: {
      decision: input.decisionId,
      suspension: String(input.suspension.id),
      run: input.runId,
      event: eventId ?? null,
    },
  });
}
