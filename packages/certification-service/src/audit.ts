import type { Queryable } from './db/types.js';

/**
 * Every action the service writes to the audit log, once: `AuditAction` is this list, so an action
 * spelled otherwise fails the typecheck, and test/audit.test.ts checks that each one is written
 * somewhere and that a flow's rows name only these.
 */
export const auditActions = [
  'partner.added',
  'reviewer.added',
  'register-reader.added',
  'evidence-reporter.added',
  'webhook.added',
  'webhook.resend',
  'signin',
  'signin.refused',
  'signout',
  'run.created',
  'run.finished',
  'run.purged',
  'decision.refused',
  'decision.signed',
  'partner.approved',
  'partner.rejected',
  'partner.suspended',
  'partner.reinstated',
  'approval.expiring',
  'regression.recorded',
] as const;

/** An action of the audit log (one of `auditActions`). */
export type AuditAction = (typeof auditActions)[number];

/** One line of the audit log: who (`admin`, `reviewer:rev_…`, `partner:ptn_…`, `service`, …) did what to what. */
export interface AuditLine {
  actor: string;
  action: AuditAction;
  /** What it was done to (a run's, partner's, principal's or delivery's id), or null. */
  subject: string | null;
  /** Its fields, stored as JSON (a Date as its ISO 8601 text). */
  detail: Record<string, unknown>;
}

/** Appends a line to the audit log, as the routes receive it: `writeAudit` bound to the database. */
export type Audit = (
  actor: string,
  action: AuditAction,
  subject: string | null,
  detail: Record<string, unknown>,
) => Promise<void>;

/**
 * Appends `line` to the audit log through `q` (a transaction, so that the line commits with what it
 * records, or the database). The one statement of the service that writes the audit log.
 */
export async function writeAudit(q: Queryable, line: AuditLine): Promise<void> {
  await q.query('INSERT INTO audit_log (actor, action, subject, detail) VALUES ($1, $2, $3, $4)', [
    line.actor,
    line.action,
    line.subject,
    JSON.stringify(line.detail),
  ]);
}
