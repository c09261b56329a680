import { writeAudit } from '../audit.js';
import type { Database, Queryable } from '../db/database.js';
import { ServiceError } from '../errors.js';
import { planScopes } from '../plan/plan.js';
import { approvalOf, type RunRowForApproval } from './approvability.js';
import { DecisionRefusal } from './decisions/decisions.js';
import {
  type ProductionDeps,
  recordSignedDecision,
  revokeApproval,
  standingApproval,
} from './decisions/signed.js';
import { settleByApproval, suspensionOf } from './decisions/suspension.js';

/** A run as `decide` reads it: its row (the reviewer pages' `UiRun` is one). */
export interface RunToDecide extends RunRowForApproval {
  id: string;
  partner_id: string;
  session_sha256: string | null;
}

/** What a reviewer decides: approve or reject a run, or revoke a partner's standing approval. */
export type DecisionRequest = { reviewer: { id: string; name: string }; note: string } & (
  | { decision: 'approved' | 'rejected'; run: RunToDecide }
  | { decision: 'revoked'; partnerId: string }
);

/** What came of it: recorded (signed, announced, audited), or refused, and why. */
export type DecisionOutcome =
  | { recorded: true; decisionId: string }
  /** The run is still open, or judged without an attestation: nothing to decide on yet. */
  | { recorded: false; refusal: 'not-attested' }
  /** An approval of a run that is not approvable; `reasons` are approvability's. */
  | { recorded: false; refusal: 'not-approvable'; reasons: string[] }
  /** The same decision as the run's latest (DecisionRefusal's message). */
  | { recorded: false; refusal: 'repeated'; message: string }
  /** A revocation of a partner without a standing approval. */
  | { recorded: false; refusal: 'nothing-to-revoke' }
  /**
   * A rejection of the run the partner's standing approval rests on: refused, since a rejection judges
   * a run and does not end production access — revoking does (`approvalId` is the approval to revoke).
   */
  | { recorded: false; refusal: 'approval-in-force'; approvalId: string; message: string };

/** Thrown inside the decision's transaction to roll it back with a refusal. */
class InForce extends ServiceError {
  constructor(readonly approvalId: string) {
    super('ERR_APPROVAL_IN_FORCE', `the partner's approval ${approvalId} rests on this run`);
    this.name = 'InForce';
  }
}

/** What `decide` needs: startProduction binds it (`production.decide`). */
export interface DecideDeps extends ProductionDeps {
  db: Database;
  /** When an approval decided now ends. */
  validUntil: () => Date;
  /** Wakes the webhook dispatcher once a decision is committed. */
  nudge: () => void;
}

/** A refusal's audit line (written outside the refused decision's transaction, which rolled back). */
const refused = (db: Queryable, actor: string, run: { id: string }, detail: Record<string, unknown>) =>
  writeAudit(db, { actor, action: 'decision.refused', subject: run.id, detail });

/**
 * The production rule, in one place: approve or reject a judged, attested run, or revoke a partner's
 * standing approval (a suspended one too: a suspension holds an approval, it does not end it). An
 * approval settles the partner's regressions recorded before it, and reinstates a partner the service
 * suspended (`partner.reinstated`); a rejection never does. An approval of a run that is not
 * approvable, the same decision again, and a rejection of the run the partner's standing approval rests
 * on (revoke ends an approval; a rejection only judges a run, so the register, the decisions API and the
 * webhooks never disagree about it) are refused with a `decision.refused` audit line; otherwise the decision is signed, its webhook event
 * queued and its audit line written in one transaction (a revocation's line is the signed decision's
 * own), and the dispatcher is nudged once it commits. Every decision on a partner takes the partner's
 * lock first, as revocation and expiry do, so that the standing approval it reads is the one that
 * holds when it commits. The note is already checked (`checkNote`).
 */
export async function decide(deps: DecideDeps, request: DecisionRequest): Promise<DecisionOutcome> {
  const actor = `reviewer:${request.reviewer.id}`;
  if (request.decision === 'revoked') {
    const revoked = await revokeApproval(
      deps.db,
      { partnerId: request.partnerId, reviewerId: request.reviewer.id, note: request.note },
      deps,
    );
    if (!revoked) return { recorded: false, refusal: 'nothing-to-revoke' };
    deps.nudge();
    return { recorded: true, decisionId: revoked.decisionId };
  }
  const { run, decision, note } = request;
  if (run.status === 'open' || run.status === 'closing' || !run.attestation)
    return { recorded: false, refusal: 'not-attested' };
  const { approvable, notApprovable } = approvalOf(run);
  if (decision === 'approved' && !approvable) {
    await refused(deps.db, actor, run, { decision, reasons: notApprovable });
    return { recorded: false, refusal: 'not-approvable', reasons: notApprovable };
  }
  let decisionId: string;
  try {
    decisionId = await deps.db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`decision:${run.partner_id}`]);
      if (decision === 'rejected') {
        const standing = await standingApproval(tx, run.partner_id);
        if (standing && standing.run_id === run.id) throw new InForce(String(standing.id));
      }
      // Read before the approval is recorded: whether it reinstates a partner the service suspended.
      const suspension = decision === 'approved' ? await suspensionOf(tx, run.partner_id) : undefined;
      const scopes = decision === 'approved' && run.plan ? planScopes(run.plan) : [];
      const validUntil = decision === 'approved' ? deps.validUntil() : null;
      const recorded = await recordSignedDecision(
        tx,
        {
          partnerId: run.partner_id,
          runId: run.id,
          reviewerId: request.reviewer.id,
          decision,
          note,
          scopes,
          validUntil,
        },
        deps,
      );
      if (decision === 'approved')
        await settleByApproval(tx, {
          partnerId: run.partner_id,
          runId: run.id,
          decisionId: recorded.decisionId,
          actor,
          suspension,
          scopes,
          validUntil,
        });
      await writeAudit(tx, {
        actor,
        action: decision === 'approved' ? 'partner.approved' : 'partner.rejected',
        subject: run.partner_id,
        detail: {
          run: run.id,
          decision: recorded.decisionId,
          note,
          sessionSha256: run.session_sha256,
          reviewer: request.reviewer.name,
        },
      });
      return recorded.decisionId;
    });
  } catch (error) {
    if (error instanceof InForce) {
      const message = `${error.message}: a rejection does not end it. To end the partner's production access, revoke the approval on the partner's production page`;
      await refused(deps.db, actor, run, { decision, reasons: [message] });
      return { recorded: false, refusal: 'approval-in-force', approvalId: error.approvalId, message };
    }
    if (!(error instanceof DecisionRefusal)) throw error;
    await refused(deps.db, actor, run, { decision, reasons: [error.message] });
    return { recorded: false, refusal: 'repeated', message: error.message };
  }
  deps.nudge();
  return { recorded: true, decisionId };
}
