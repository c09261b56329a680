import { randomBytes } from 'node:crypto';
import type { Database, Queryable } from '../db/database.js';
import type { SigningKey } from '../keys.js';
import { enqueueEvent } from '../outbox/outbox.js';
import type { DigestedPlan } from '../plan/plan.js';
import { standingApproval } from '../production/decisions/signed.js';
import { serviceActor, suspendApproval } from '../production/decisions/suspension.js';
import { registerEntries } from '../production/register/register.js';
import { checkFinding, type RegressionFinding } from './finding.js';
import { regressionsRecorded } from './metrics.js';
import {
  type RegressionConsequence,
  type RegressionPolicy,
  regressionStatement,
  signRegression,
} from './statement.js';

export interface RecordOptions {
  /** `--on-regression`: `notify` (announce only) or `suspend` (an active partner is suspended). */
  policy: RegressionPolicy;
  /** The attestation key: it signs the regression's statement (and a suspension). */
  signingKey: Pick<SigningKey, 'privateKey' | 'kid'>;
  /** Called once a regression is committed: the webhooks leave, the gates' change polls hear of it. */
  nudge?: () => void;
}

/** What became of a finding. */
export interface RecordedRegression {
  /** false: the same partner, check and window was recorded before (`regressionId` is that one). */
  recorded: boolean;
  regressionId: string;
  consequence: RegressionConsequence;
  /** The suspension decision, when this finding suspended the partner. */
  suspensionId: string | null;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The run a regression's statement names: the standing approval's, else the partner's latest approved one. */
async function certifiedRun(
  tx: Queryable,
  partnerId: string,
): Promise<{ id: string; attestation: string | null; plan: DigestedPlan | null } | undefined> {
  const standing = await standingApproval(tx, partnerId);
  const [row] = await tx.query<{ id: string; attestation: string | null; plan: DigestedPlan | null }>(
    standing
      ? 'SELECT id, attestation, plan FROM runs WHERE id = $1'
      : `SELECT r.id, r.attestation, r.plan FROM decisions d JOIN runs r ON r.id = d.run_id
         WHERE d.partner_id = $1 AND d.decision = 'approved' ORDER BY d.created_at DESC, d.id DESC LIMIT 1`,
    [standing ? standing.run_id : partnerId],
  );
  return row;
}

/**
 * Records a regression: a decisive plan check failing on a partner's production evidence. In one
 * transaction under the partner's decision lock (the one approvals, revocations and expiries take):
 * the regression with its evidence and its signed statement, the `partner.regressed` event, a
 * `regression.recorded` audit line, and — under `suspend`, for a partner `active` now — a `suspended`
 * decision of the service with its `partner.suspended` event (the register then says `suspended`). A
 * partner not active (never approved, revoked, expired, already suspended) gets the regression recorded
 * and announced, nothing else. The same partner, check and window is recorded once: handed in again,
 * it changes nothing and returns the first. Throws a TypeError for a malformed finding, and an Error
 * for an unknown partner.
 */
export async function recordRegression(
  db: Database,
  raw: RegressionFinding,
  options: RecordOptions,
): Promise<RecordedRegression> {
  const finding = checkFinding(raw);
  const outcome = await db.transaction(async (tx): Promise<RecordedRegression> => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`decision:${finding.partnerId}`]);
    const [existing] = await tx.query<{
      id: string;
      consequence: RegressionConsequence;
      suspension_id: string | null;
    }>(
      `SELECT id, consequence, suspension_id FROM regressions
       WHERE partner_id = $1 AND check_id = $2 AND window_from = $3 AND window_to = $4`,
      [finding.partnerId, finding.check, finding.window.from, finding.window.to],
    );
    if (existing)
      return {
        recorded: false,
        regressionId: existing.id,
        consequence: existing.consequence,
        suspensionId: existing.suspension_id,
      };
    const [partner] = await tx.query<{ id: string; name: string }>(
      'SELECT id, name FROM partners WHERE id = $1',
      [finding.partnerId],
    );
    if (!partner)
      throw new Error(
        `a regression names partner ${JSON.stringify(finding.partnerId.slice(0, 60))}, which the service does not know: evidence must name a partner added with admin add-partner`,
      );
    const [entry] = await registerEntries(tx, new Date(), partner.id);
    const active = entry?.status === 'active';
    const suspend = active && options.policy === 'suspend';
    const consequence: RegressionConsequence = suspend ? 'suspended' : active ? 'notified' : 'unchanged';
    const regressionId = `reg_${randomBytes(12).toString('base64url')}`;
    const run = await certifiedRun(tx, partner.id);
    // Announced before the suspension it causes (partner.regressed, then partner.suspended, in order).
    const eventId = await enqueueEvent(tx, {
      type: 'partner.regressed',
      dedupeKey: `regression:${regressionId}`,
      data: {
        partnerId: partner.id,
        regressionId,
        check: finding.check,
        detail: finding.detail,
        at: iso(finding.at),
        window: { from: iso(finding.window.from), to: iso(finding.window.to) },
        policy: options.policy,
        consequence,
        ...(run && { runId: run.id }),
      },
    });
    // The suspension's id goes into the statement.
    const note = `Suspended on regression ${regressionId}: the check ${finding.check} failed on production evidence from ${iso(finding.window.from)} to ${iso(finding.window.to)}. ${finding.detail}`;
    const suspension = suspend
      ? await suspendApproval(
          tx,
          { partnerId: partner.id, note: note.slice(0, 2000), regressionId },
          { key: options.signingKey },
        )
      : undefined;
    const recordedAt = new Date();
    const statement = regressionStatement(
      {
        regressionId,
        partner: { id: partner.id, name: partner.name },
        check: finding.check,
        detail: finding.detail,
        at: iso(finding.at),
        window: { from: iso(finding.window.from), to: iso(finding.window.to) },
        exchanges: [...finding.exchanges],
        policy: options.policy,
        consequence,
        suspensionId: suspension?.decisionId ?? null,
        runId: run?.id ?? null,
        plan: run?.plan ? { id: run.plan.id, digest: run.plan.digest } : null,
        recordedAt: recordedAt.toISOString(),
      },
      run?.attestation ?? null,
    );
    const envelope = `${JSON.stringify(signRegression(statement, options.signingKey), null, 2)}\n`;
    await tx.query(
      `INSERT INTO regressions (id, partner_id, check_id, detail, at, window_from, window_to, exchanges, policy,
         consequence, run_id, suspension_id, envelope, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
      [
        regressionId,
        partner.id,
        finding.check,
        finding.detail,
        finding.at,
        finding.window.from,
        finding.window.to,
        JSON.stringify(finding.exchanges),
        options.policy,
        consequence,
        run?.id ?? null,
        suspension?.decisionId ?? null,
        envelope,
        recordedAt,
      ],
    );
    await tx.query('INSERT INTO audit_log (actor, action, subject, detail) VALUES ($1, $2, $3, $4)', [
      serviceActor,
      'regression.recorded',
      partner.id,
      JSON.stringify({
        regression: regressionId,
        check: finding.check,
        window: { from: iso(finding.window.from), to: iso(finding.window.to) },
        exchanges: finding.exchanges.length,
        policy: options.policy,
        consequence,
        suspension: suspension?.decisionId ?? null,
        event: eventId ?? null,
      }),
    ]);
    return { recorded: true, regressionId, consequence, suspensionId: suspension?.decisionId ?? null };
  });
  if (outcome.recorded) {
    regressionsRecorded.inc({ check: finding.check, consequence: outcome.consequence });
    options.nudge?.();
  }
  return outcome;
}
