import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sourceFiles } from '../../../test-support/layers.js';
import { type AuditAction, auditActions, writeAudit } from '../src/audit.js';
import type { Queryable } from '../src/db/types.js';
import { addEvidenceReporter } from '../src/evidence/reporters.js';
import type { RunToDecide } from '../src/production/decide.js';
import { suspendApproval } from '../src/production/decisions/suspension.js';
import { addRegisterReader } from '../src/production/register/register.js';
import { addWebhook } from '../src/production/webhooks/admin.js';
import { purgeExpired } from '../src/retention/retention.js';
import { secretsKeyFrom } from '../src/secrets.js';
import { approvableRun, attestedRun, type InProcessService, inProcessService } from './support/in-process.js';
import { api } from './support/service.js';

// The audit log has one writer (src/audit.ts's writeAudit) and one list of actions (auditActions, whose
// type AuditAction every writer takes): a raw INSERT elsewhere, an action no writer names, and a row whose
// action is not in the list all fail here; an action spelled otherwise fails the typecheck (below).

const packageDir = fileURLToPath(new URL('..', import.meta.url));
const sources = Object.fromEntries(
  sourceFiles(fileURLToPath(new URL('../src', import.meta.url))).map((file) => [
    relative(packageDir, file),
    readFileSync(file, 'utf8'),
  ]),
);

/** The one file that writes the audit log. */
const writer = 'src/audit.ts';

/**
 * Files that still write it themselves, held by another change now: remove server.ts once its
 * `auditLog` calls writeAudit (this list must then be empty, and the test fails until it is).
 */
const awaiting: string[] = [];

/** The `file:line` of every raw `INSERT INTO audit_log` outside the writer, given the files' texts. */
export function rawAuditInserts(files: Record<string, string>): string[] {
  return Object.entries(files).flatMap(([file, text]) =>
    file === writer
      ? []
      : text
          .split('\n')
          .flatMap((line, index) =>
            /insert\s+into\s+audit_log\b/i.test(line) ? [`${file}:${index + 1}`] : [],
          ),
  );
}

/** The actions of the list that no file but the writer names as a quoted literal. */
export function unwrittenActions(actions: readonly string[], files: Record<string, string>): string[] {
  const others = Object.entries(files)
    .filter(([file]) => file !== writer)
    .map(([, text]) => text);
  return actions.filter((action) => !others.some((text) => text.includes(`'${action}'`)));
}

/** The actions of `rows` not in the list. */
const strayActions = (rows: ReadonlyArray<{ action: string }>) =>
  [...new Set(rows.map((row) => row.action))].filter(
    (action) => !(auditActions as readonly string[]).includes(action),
  );

// Never called: it only has to typecheck, and does so only while a misspelt action is an error.
export const misspelt = (q: Queryable) =>
  // @ts-expect-error 'partner.aproved' is not an AuditAction
  writeAudit(q, { actor: 'admin', action: 'partner.aproved', subject: null, detail: {} });

describe('the audit log’s one writer', () => {
  it('no file of src/ but audit.ts writes the audit log', () => {
    expect(rawAuditInserts(sources).map((at) => at.split(':')[0])).toEqual(awaiting);
  });

  it('would catch a raw insert (negative control)', () => {
    const planted = {
      ...sources,
      'src/production/planted.ts':
        "await tx.query(\n  'INSERT INTO audit_log (actor, action, subject, detail) VALUES ($1, $2, $3, $4)', []);",
      'src/runs/planted.ts': '`insert into   audit_log (actor) VALUES ($1)`',
    };
    expect(
      rawAuditInserts(planted).filter((at) => !awaiting.some((file) => at.startsWith(`${file}:`))),
    ).toEqual(['src/production/planted.ts:2', 'src/runs/planted.ts:1']);
  });

  it('every action of the list is written somewhere, once in the list', () => {
    expect(unwrittenActions(auditActions, sources)).toEqual([]);
    expect(new Set(auditActions).size).toBe(auditActions.length);
  });

  it('would catch an action no file writes (negative control)', () => {
    expect(unwrittenActions([...auditActions, 'partner.renamed'], sources)).toEqual(['partner.renamed']);
  });
});

describe('what a flow writes to the audit log', () => {
  let svc: InProcessService;
  beforeAll(async () => {
    svc = await inProcessService({
      sweepIntervalMs: 3_600_000,
      production: { approvalValidDays: 10, expiryNoticeDays: 30 },
    });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('names only actions of the list, and each principal’s line as before', async () => {
    const { db } = svc;
    const partner = await svc.partner('Acme Lending');
    const { reviewerId } = await svc.reviewer('Rita');
    const reviewer = { id: reviewerId, name: 'Rita' };
    const { readerId } = await addRegisterReader(db, 'production token endpoint');
    const { reporterId } = await addEvidenceReporter(db, 'production gateway eu-1');
    const { webhookId } = await addWebhook(db, secretsKeyFrom('audit test'), {
      url: 'https://partners.example.com/hooks/certification',
      events: ['partner.approved'],
    });
    // run.created, through the partner API (the service's Audit callback).
    expect((await api(svc.service.url, partner.apiKey, 'POST', '/api/runs', {})).status).toBe(201);
    // decision.refused, partner.approved, decision.signed, partner.rejected.
    const production = svc.service.production;
    const decideOn = async (decision: 'approved' | 'rejected', runId: string, note: string) =>
      production.decide({ decision, run: await runRow(db, runId), reviewer, note });
    const notApprovable = await attestedRun(db, partner.partnerId);
    expect(await decideOn('approved', notApprovable, '')).toMatchObject({
      recorded: false,
      refusal: 'not-approvable',
    });
    const approvable = await approvableRun(db, partner.partnerId);
    expect(await decideOn('approved', approvable, 'ok')).toMatchObject({ recorded: true });
    expect(await decideOn('rejected', notApprovable, 'no')).toMatchObject({ recorded: true });
    // approval.expiring: the approval ends in 10 days, notices go 30 days ahead.
    expect(await production.sweep()).toMatchObject({ noticed: 1 });
    // partner.suspended, then partner.reinstated by a new approval.
    await db.transaction((tx) =>
      suspendApproval(
        tx,
        { partnerId: partner.partnerId, note: 'suspended by the audit test', regressionId: 'reg_audit' },
        { key: production.key },
      ),
    );
    const again = await approvableRun(db, partner.partnerId);
    expect(await decideOn('approved', again, 'again')).toMatchObject({ recorded: true });
    // run.purged: a run that ended 40 days ago with no decision, kept 30.
    const old = await attestedRun(db, partner.partnerId);
    await db.query("UPDATE runs SET finished_at = now() - interval '40 days' WHERE id = $1", [old]);
    expect((await purgeExpired(db, 30)).runs).toEqual([old]);

    const rows = await db.query<{ actor: string; action: string; subject: string | null; detail: unknown }>(
      'SELECT actor, action, subject, detail FROM audit_log ORDER BY id',
    );
    expect(strayActions(rows)).toEqual([]);
    const written: AuditAction[] = [
      'partner.added',
      'reviewer.added',
      'register-reader.added',
      'evidence-reporter.added',
      'webhook.added',
      'run.created',
      'decision.refused',
      'decision.signed',
      'partner.approved',
      'partner.rejected',
      'approval.expiring',
      'partner.suspended',
      'partner.reinstated',
      'run.purged',
    ];
    expect([...new Set(rows.map((row) => row.action))].sort()).toEqual([...written].sort());
    expect(rows.slice(0, 5)).toEqual([
      {
        actor: 'admin',
        action: 'partner.added',
        subject: partner.partnerId,
        detail: { name: 'Acme Lending' },
      },
      { actor: 'admin', action: 'reviewer.added', subject: reviewerId, detail: { name: 'Rita' } },
      {
        actor: 'admin',
        action: 'register-reader.added',
        subject: readerId,
        detail: { name: 'production token endpoint' },
      },
      {
        actor: 'admin',
        action: 'evidence-reporter.added',
        subject: reporterId,
        detail: { name: 'production gateway eu-1' },
      },
      {
        actor: 'admin',
        action: 'webhook.added',
        subject: webhookId,
        detail: { url: 'https://partners.example.com/hooks/certification', events: ['partner.approved'] },
      },
    ]);
    expect(rows.find((row) => row.action === 'partner.rejected')).toMatchObject({
      actor: `reviewer:${reviewerId}`,
      subject: partner.partnerId,
      detail: { run: notApprovable, note: 'no', reviewer: 'Rita' },
    });
    expect(rows.find((row) => row.action === 'approval.expiring')).toMatchObject({
      actor: 'system',
      subject: partner.partnerId,
      detail: { validUntil: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) },
    });
  });

  it('would catch a row whose action is not in the list (negative control)', async () => {
    await svc.db.query(
      "INSERT INTO audit_log (actor, action, subject, detail) VALUES ('admin', 'partner.aproved', NULL, '{}')",
    );
    expect(strayActions(await svc.db.query<{ action: string }>('SELECT action FROM audit_log'))).toEqual([
      'partner.aproved',
    ]);
  });
});

/** A run's row as `decide` reads it. */
async function runRow(db: Queryable, id: string): Promise<RunToDecide> {
  const [row] = await db.query<RunToDecide>('SELECT * FROM runs WHERE id = $1', [id]);
  return row!;
}
