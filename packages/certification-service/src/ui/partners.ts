import type { Hono } from 'hono';
import type { Database } from '../db/database.js';
import { registerEntries } from '../production/register/register.js';
import { iso } from '../runs/runs.js';
import { h, page } from '../web/html.js';
import { type Env, html } from './answer.js';

/** The partners page (each partner's production standing, latest attested run and decision) and a partner's page. */
export function mountPartnerPages(app: Hono<Env>, db: Database) {
  app.get('/ui/partners', async (c) => {
    const partners = await db.query<{
      id: string;
      name: string;
      run_id: string | null;
      verdict: string | null;
      finished_at: string | null;
      decision: string | null;
      decided_at: string | null;
      decided_run: string | null;
    }>(
      `SELECT p.id, p.name, r.id AS run_id, r.verdict, r.finished_at, d.decision, d.created_at AS decided_at,
         d.run_id AS decided_run
       FROM partners p
       LEFT JOIN LATERAL (SELECT id, verdict, finished_at FROM runs WHERE partner_id = p.id AND attestation IS NOT NULL
                          ORDER BY finished_at DESC LIMIT 1) r ON true
       LEFT JOIN LATERAL (SELECT decision, created_at, run_id FROM decisions WHERE partner_id = p.id
                          ORDER BY created_at DESC, id DESC LIMIT 1) d ON true
       ORDER BY p.name, p.id`,
    );
    // Production access as the register says it (one source for the register, the API and this page).
    const standing = new Map(
      (await registerEntries(db, new Date())).map((entry) => [entry.partnerId, entry]),
    );
    const production = (id: string) => {
      const entry = standing.get(id);
      return entry
        ? `<span class="${h(entry.status)}" data-production="${h(entry.status)}">${h(entry.status)}</span>${entry.scopes.length > 0 ? ` <span class="muted">${h(entry.scopes.join(' '))}</span>` : ''}`
        : '<span class="muted" data-production="none">none</span>';
    };
    const rows = partners
      .map(
        (p) => `<tr data-partner="${h(p.id)}"><td><a href="/ui/partners/${h(p.id)}">${h(p.name)}</a></td>
<td>${production(p.id)}</td>
<td>${p.run_id ? `<a href="/ui/runs/${h(p.run_id)}">${h(p.run_id)}</a> <span class="${h(p.verdict)}">${h(p.verdict)}</span> <span class="muted">${h(iso(p.finished_at))}</span>` : '<span class="muted">no attested run yet</span>'}</td>
<td>${p.decision ? `<span class="${h(p.decision)}">${h(p.decision)}</span> on run <a href="/ui/runs/${h(p.decided_run)}">${h(p.decided_run)}</a> <span class="muted">${h(iso(p.decided_at))}</span>` : '<span class="muted">undecided</span>'}</td></tr>`,
      )
      .join('\n');
    return html(
      c,
      page(
        'Partners',
        `<table><thead><tr><th>Partner</th><th>Production</th><th>Latest attested run</th><th>Latest decision (on which run)</th></tr></thead><tbody>${rows || '<tr><td colspan="4" class="muted">No partner yet: add one with <code>partner-certification-service admin add-partner</code>.</td></tr>'}</tbody></table>`,
        c.get('reviewer'),
      ),
    );
  });

  app.get('/ui/partners/:id', async (c) => {
    const [partner] = await db.query<{ id: string; name: string }>(
      'SELECT id, name FROM partners WHERE id = $1',
      [c.req.param('id')],
    );
    if (!partner)
      return html(c, page('No such partner', '<p>No partner has this id.</p>', c.get('reviewer')), 404);
    const runs = await db.query<{
      id: string;
      status: string;
      verdict: string | null;
      certify: boolean;
      created_at: string;
      finished_at: string | null;
      integration: { name?: string; version?: string } | null;
    }>(
      'SELECT id, status, verdict, certify, created_at, finished_at, integration FROM runs WHERE partner_id = $1 ORDER BY created_at DESC LIMIT 200',
      [partner.id],
    );
    const decisions = await decisionsHtml(db, partner.id);
    const rows = runs
      .map(
        (
          run,
        ) => `<tr><td><a href="/ui/runs/${h(run.id)}">${h(run.id)}</a></td><td>${h(run.status === 'closing' ? 'open' : run.status)}</td>
<td class="${h(run.verdict)}">${h(run.verdict ?? '—')}</td><td>${run.certify ? 'certification' : 'practice'}</td>
<td>${h([run.integration?.name, run.integration?.version].filter(Boolean).join(' ') || '—')}</td><td>${h(iso(run.created_at))}</td></tr>`,
      )
      .join('\n');
    return html(
      c,
      page(
        partner.name,
        `<p class="muted">${h(partner.id)}</p><p><a href="/ui/partners/${h(partner.id)}/production">Production: standing, signed decisions, revoke</a></p><h2>Decisions</h2>${decisions}<h2>Runs</h2>
<table><thead><tr><th>Run</th><th>Status</th><th>Verdict</th><th>Kind</th><th>Integration</th><th>Created</th></tr></thead><tbody>${rows || '<tr><td colspan="6" class="muted">No run yet.</td></tr>'}</tbody></table>`,
        c.get('reviewer'),
      ),
    );
  });
}

async function decisionsHtml(db: Database, partnerId: string): Promise<string> {
  const rows = await db.query<{
    decision: string;
    note: string;
    created_at: string;
    run_id: string;
    reviewer: string | null;
  }>(
    `SELECT d.decision, d.note, d.created_at, d.run_id, r.name AS reviewer FROM decisions d LEFT JOIN reviewers r ON r.id = d.reviewer_id
     WHERE d.partner_id = $1 ORDER BY d.created_at DESC, d.id DESC`,
    [partnerId],
  );
  if (rows.length === 0) return '<p class="muted">No decision yet.</p>';
  return `<table><thead><tr><th>Decision</th><th>By</th><th>When</th><th>On run</th><th>Note</th></tr></thead><tbody>${rows
    .map(
      (
        d,
      ) => `<tr><td class="${h(d.decision)}">${h(d.decision)}</td><td>${h(d.reviewer ?? 'the service')}</td><td>${h(iso(d.created_at))}</td>
<td><a href="/ui/runs/${h(d.run_id)}">${h(d.run_id)}</a></td><td>${h(d.note)}</td></tr>`,
    )
    .join('\n')}</tbody></table>`;
}
