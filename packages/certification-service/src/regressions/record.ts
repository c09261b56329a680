import { writeAudit } from '../audit.js';
import type { Database, Queryable } from '../db/database.js';
import { UsageError } from '../errors.js';
import type { SigningKey } from '../keys.js';
import { enqueueEvent } from '../outbox/outbox.js';
import type { DigestedPlan } from '../plan/plan.js';
import { standingApproval } from '../production/decisions/signed.js';
import { serviceActor, suspendApproval } from '../production/decisions/suspension.js';
import { registerEntries } from '../production/register/register.js';
import { newId } from '../secrets.js';
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
  check: string;
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
 * it changes nothing and returns the first. Throws a UsageError for a malformed finding, and for
 * an unknown partner. Once committed, the metric counts it and `nudge` is called.
 */
export async function recordRegression(
  db: Database,
  raw: RegressionFinding,
  options: RecordOptions,
): Promise<RecordedRegression> {
  const outcome = await db.transaction((tx) => recordRegressionIn(tx, raw, options));
  regressionCommitted([outcome], options);
  return outcome;
}

/** After the transaction of `recordRegressionIn` committed: counts the regressions recorded, nudges once. */
export function regressionCommitted(
  outcomes: readonly RecordedRegression[],
  options: Pick<RecordOptions, 'nudge'>,
): void {
  const recorded = outcomes.filter((outcome) => outcome.recorded);
  for (const outcome of recorded)
    regressionsRecorded.inc({ check: outcome.check, consequence: outcome.consequence });
  if (recorded.length > 0) options.nudge?.();
}

/** The regression already recorded for the finding's partner, check and window, if any. */
async function recordedBefore(
  tx: Queryable,
  finding: RegressionFinding,
): Promise<RecordedRegression | undefined> {
  const [existing] = await tx.query<{
    id: string;
    consequence: RegressionConsequence;
    suspension_id: string | null;
  }>(
    `SELECT id, consequence, suspension_id FROM regressions
     WHERE partner_id = $1 AND check_id = $2 AND window_from = $3 AND window_to = $4`,
    [finding.partnerId, finding.check, finding.window.from, finding.window.to],
  );
  return (
    existing && {
      recorded: false,
      regressionId: existing.id,
      check: finding.check,
      consequence: existing.consequence,
      suspensionId: existing.suspension_id,
    }
  );
}

/** The partner a finding names: a UsageError saying so when the service does not know it. */
async function partnerOf(tx: Queryable, partnerId: string): Promise<{ id: string; name: string }> {
  const [partner] = await tx.query<{ id: string; name: string }>(
    'SELECT id, name FROM partners WHERE id = $1',
    [partnerId],
  );
  if (!partner)
    throw new UsageError(
      `a regression names partner ${JSON.stringify(partnerId.slice(0, 60))}, which the service does not know: evidence must name a partner added with admin add-partner`,
    );
  return partner;
}

/** What is decided about a regression before it is written: its id, what it does, the run it names. */
interface Regression {
  id: string;
  finding: RegressionFinding;
  partner: { id: string; name: string };
  policy: RegressionPolicy;
  consequence: RegressionConsequence;
  suspensionId: string | null;
  run: { id: string; attestation: string | null; plan: DigestedPlan | null } | undefined;
}

/** The regression's signed statement and row. */
async function storeRegression(
  tx: Queryable,
  regression: Regression,
  key: RecordOptions['signingKey'],
): Promise<void> {
  const { finding, run } = regression;
  const recordedAt = new Date();
  const statement = regressionStatement(
    {
      regressionId: regression.id,
      partner: regression.partner,
      check: finding.check,
      detail: finding.detail,
      at: iso(finding.at),
      window: { from: iso(finding.window.from), to: iso(finding.window.to) },
      exchanges: [...finding.exchanges],
      policy: regression.policy,
      consequence: regression.consequence,
      suspensionId: regression.suspensionId,
      runId: run?.id ?? null,
      plan: run?.plan ? { id: run.plan.id, digest: run.plan.digest } : null,
      recordedAt: recordedAt.toISOString(),
    },
    run?.attestation ?? null,
  );
  await tx.query(
    `INSERT INTO regressions (id, partner_id, check_id, detail, at, window_from, window_to, exchanges, policy,
       consequence, run_id, suspension_id, envelope, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
    [
      regression.id,
      regression.partner.id,
      finding.check,
      finding.detail,
      finding.at,
      finding.window.from,
      finding.window.to,
      JSON.stringify(finding.exchanges),
      regression.policy,
      regression.consequence,
      run?.id ?? null,
      regression.suspensionId,
      `${JSON.stringify(signRegression(statement, key), null, 2)}\n`,
      recordedAt,
    ],
  );
}

/** `partner.regressed`: announced before the suspension it causes, so receivers see them in that order. */
const announceRegression = (tx: Queryable, regression: Omit<Regression, 'suspensionId'>) =>
  enqueueEvent(tx, {
    type: 'partner.regressed',
    dedupeKey: `regression:${regression.id}`,
    data: {
      partnerId: regression.partner.id,
      regressionId: regression.id,
      check: regression.finding.check,
      detail: regression.finding.detail,
      at: iso(regression.finding.at),
      window: { from: iso(regression.finding.window.from), to: iso(regression.finding.window.to) },
      policy: regression.policy,
      consequence: regression.consequence,
      ...(regression.run && { runId: regression.run.id }),
    },
  });

/**
 * `recordRegression` inside the caller's transaction `tx` (the evidence's commit, so that the judge's
 * state and its findings commit together or not at all); the caller calls `regressionCommitted` once
 * it committed.
 */
export async function recordRegressionIn(
  tx: Queryable,
  raw: RegressionFinding,
  options: RecordOptions,
): Promise<RecordedRegression> {
  const finding = checkFinding(raw);
  await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`decision:${finding.partnerId}`]);
  const before = await recordedBefore(tx, finding);
  if (before) return before;
  const partner = await partnerOf(tx, finding.partnerId);
  const [entry] = await registerEntries(tx, new Date(), partner.id);
  const active = entry?.status === 'active';
  const suspend = active && options.policy === 'suspend';
  const decided = {
    id: newId('reg'),
    finding,
    partner,
    policy: options.policy,
    consequence: (suspend ? 'suspended' : active ? 'notified' : 'unchanged') as RegressionConsequence,
    run: await certifiedRun(tx, partner.id),
  };
  const eventId = await announceRegression(tx, decided);
  const suspension = suspend
    ? await suspendApproval(
        tx,
        {
          partnerId: partner.id,
          note: `Suspended on regression ${decided.id}: the check ${finding.check} failed on production evidence from ${iso(finding.window.from)} to ${iso(finding.window.to)}. ${finding.detail}`.slice(
            0,
            2000,
          ),
          regressionId: decided.id,
        },
        { key: options.signingKey },
      )
    : undefined;
  const suspensionId = suspension?.decisionId ?? null;
  await storeRegression(tx, { ...decided, suspensionId }, options.signingKey);
  await writeAudit(tx, {
    actor: serviceActor,
    action: 'regression.recorded',
    subject: partner.id,
    detail: {
      regression: decided.id,
      check: finding.check,
      window: { from: iso(finding.window.from), to: iso(finding.window.to) },
      exchanges: finding.exchanges.length,
      policy: options.policy,
      consequence: decided.consequence,
      suspension: suspensionId,
      event: eventId ?? null,
    },
  });
  return {
    recorded: true,
    regressionId: decided.id,
    check: finding.check,
    consequence: decided.consequence,
    suspensionId,
  };
}
