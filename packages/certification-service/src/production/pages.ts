import type { Context, Hono } from 'hono';
import type { Database } from '../db/database.js';
import { iso } from '../runs/runs.js';
import { h, page, uiContentSecurityPolicy, wantsProblem } from '../web/html.js';
import { problem } from '../web/problem.js';
import type { DecisionOutcome, DecisionRequest } from './decide.js';
import { checkNote } from './decisions/note.js';
import { registerEntries } from './register/register.js';
import { mountWebhookPages } from './webhook-pages.js';

type Env = { Variables: { reviewer: { id: string; name: string; csrf: string } } };

/** A part of a partner's production page another part of the service adds (its HTML, escaped by it). */
export type PartnerSection = (partnerId: string) => Promise<string>;

const html = (c: Context<Env>, body: string, status: 200 | 400 | 404 | 409 = 200) =>
  c.html(body, status, {
    'content-security-policy': uiContentSecurityPolicy,
    'referrer-policy': 'same-origin',
    'cache-control': 'no-store',
  });

export interface ProductionPagesDeps {
  db: Database;
  /** The production rule (`production.decide`): a revocation goes through it. */
  decide: (request: DecisionRequest) => Promise<DecisionOutcome>;
  noticeDays: number;
  /** Wakes the webhook dispatcher (after a delivery is sent again). */
  nudge: () => void;
  /** Parts shown below the decisions (the regressions). */
  sections?: ReadonlyArray<PartnerSection>;
}

/**
 * The reviewer UI's production pages (behind the UI's sign-in, CSRF and origin checks, which cover
 * `/ui/*`): a partner's production standing, its decisions with their signed statements, revocation
 * with a note; the webhooks, every delivery with its attempts, and sending one again.
 */
export function mountProductionUi(
  // biome-ignore lint/suspicious/noExplicitAny: mounted on the service's one app
  app: Hono<any>,
  deps: ProductionPagesDeps,
) {
  const { db } = deps;

  app.get('/ui/partners/:id/production', (c: Context<Env>) => partnerProductionPage(c, deps));

  app.post('/ui/partners/:id/revoke', async (c: Context<Env>) => {
    const reviewer = c.get('reviewer');
    const partnerId = c.req.param('id') ?? '';
    const form = await c.req.parseBody();
    const checked = checkNote(form.note);
    const back = `<p><a href="/ui/partners/${h(partnerId)}/production">Back</a></p>`;
    if ('problem' in checked) {
      if (wantsProblem(c)) return problem(c, 400, 'Not revoked', checked.problem);
      return html(c, page('Not revoked', `<p class="error">${h(checked.problem)}</p>${back}`, reviewer), 400);
    }
    const { note } = checked;
    const revoked = await deps.decide({ decision: 'revoked', partnerId, reviewer, note });
    if (!revoked.recorded)
      return html(
        c,
        page(
          'Not revoked',
          `<p class="error">This partner has no standing approval to revoke.</p>${back}`,
          reviewer,
        ),
        409,
      );
    return c.redirect(`/ui/partners/${encodeURIComponent(partnerId)}/production`, 303);
  });

  app.get('/ui/decisions/:id/statement', async (c: Context<Env>) => {
    const [row] = await db.query<{ envelope: string }>(
      'SELECT envelope FROM decision_statements WHERE decision_id = $1',
      [c.req.param('id')],
    );
    if (!row)
      return html(c, page('Not available', '<p>No signed decision has this id.</p>', c.get('reviewer')), 404);
    return statementResponse(row.envelope, c.req.param('id') ?? 'decision');
  });
  mountWebhookPages(app, { db, nudge: deps.nudge, html });
}

/** A partner's production page: its standing as the register says it, revoke, its decisions, the sections. */
async function partnerProductionPage(c: Context<Env>, deps: ProductionPagesDeps) {
  const { db } = deps;
  const reviewer = c.get('reviewer');
  const [partner] = await db.query<{ id: string; name: string }>(
    'SELECT id, name FROM partners WHERE id = $1',
    [c.req.param('id')],
  );
  if (!partner) return html(c, page('No such partner', '<p>No partner has this id.</p>', reviewer), 404);
  const decisions = await db.query<{
    id: string;
    decision: 'approved' | 'rejected' | 'revoked' | 'expired' | 'suspended';
    note: string;
    scopes: string[] | null;
    valid_until: string | null;
    created_at: string;
    run_id: string;
    reviewer: string | null;
    signed: boolean;
  }>(
    `SELECT d.id, d.decision, d.note, d.scopes, d.valid_until, d.created_at, d.run_id, r.name AS reviewer,
       s.decision_id IS NOT NULL AS signed
     FROM decisions d LEFT JOIN reviewers r ON r.id = d.reviewer_id
     LEFT JOIN decision_statements s ON s.decision_id = d.id::text
     WHERE d.partner_id = $1 ORDER BY d.created_at DESC, d.id DESC LIMIT 200`,
    [partner.id],
  );
  // The standing as the register says it: one source for the register, the API and every page.
  const [entry] = await registerEntries(db, new Date(), partner.id);
  const expiring =
    entry?.status === 'active' &&
    entry.validUntil !== null &&
    new Date(entry.validUntil).getTime() - Date.now() < deps.noticeDays * 86_400_000;
  const standing = entry
    ? `<p>Production: <strong class="${h(entry.status === 'active' ? 'approved' : 'rejected')}">${h(entry.status)}</strong>${
        entry.status === 'active'
          ? ` for <code>${h(entry.scopes.join(' ') || '(no scope)')}</code> until ${h(entry.validUntil ?? 'no end')}`
          : entry.status === 'suspended'
            ? ' <span class="error">(the service suspended it on a regression, below: approving a certification run reinstates it; revoking ends it)</span>'
            : ''
      }${expiring ? ` <span class="error">(expires within ${deps.noticeDays} days: a new certification run replaces it)</span>` : ''}</p>`
    : '<p class="muted">Not in the register: no approval yet.</p>';
  // A suspended partner's approval still stands (held, not ended): a reviewer can revoke it.
  const revoke =
    entry?.status === 'active' || entry?.status === 'suspended'
      ? `<h2>Revoke</h2><form method="post" action="/ui/partners/${h(partner.id)}/revoke">
<input type="hidden" name="csrf" value="${h(reviewer.csrf)}">
<p><label for="note">Note (required, recorded and signed with your name and the time)</label><textarea id="note" name="note" maxlength="2000" required></textarea></p>
<button name="decision" value="revoked">Revoke the approval</button></form>`
      : '';
  const sections = (await Promise.all((deps.sections ?? []).map((section) => section(partner.id)))).join(
    '\n',
  );
  const rows = decisions
    .map(
      (
        d,
      ) => `<tr><td class="${h(d.decision)}">${h(d.decision)}</td><td>${h(d.reviewer ?? 'the service')}</td><td>${h(iso(d.created_at))}</td>
<td><a href="/ui/runs/${h(d.run_id)}">${h(d.run_id)}</a></td><td><code>${h((d.scopes ?? []).join(' '))}</code></td><td>${h(iso(d.valid_until) ?? '—')}</td><td>${h(d.note)}</td>
<td>${d.signed ? `<a href="/ui/decisions/${h(d.id)}/statement">statement</a>` : '<span class="muted">unsigned</span>'}</td></tr>`,
    )
    .join('\n');
  return html(
    c,
    page(
      `${partner.name}: production`,
      `<p><a href="/ui/partners/${h(partner.id)}">Back to the partner</a></p>${standing}${revoke}<h2>Decisions</h2>
<table><thead><tr><th>Decision</th><th>By</th><th>When</th><th>On run</th><th>Scopes</th><th>Valid until</th><th>Note</th><th>Signed</th></tr></thead><tbody>${rows || '<tr><td colspan="8" class="muted">No decision yet.</td></tr>'}</tbody></table>${sections}`,
      reviewer,
    ),
  );
}

/** A decision statement as a download (`<decisionId>.decision.json`). */
export function statementResponse(envelope: string, decisionId: string): Response {
  return new Response(envelope, {
    headers: {
      'content-type': 'application/json',
      'content-disposition': `attachment; filename="${decisionId.replace(/[^A-Za-z0-9_-]/g, '_')}.decision.json"`,
      'x-content-type-options': 'nosniff',
      'content-security-policy': "default-src 'none'",
    },
  });
}
