import type { Context, Hono } from 'hono';
import type { Database } from '../db/database.js';
import { iso } from '../runs/runs.js';
import { h, page, uiContentSecurityPolicy, wantsProblem } from '../web/html.js';
import { problem } from '../web/problem.js';
import type { DecisionOutcome, DecisionRequest } from './decide.js';
import { checkNote } from './decisions/note.js';
import { registerEntries } from './register/register.js';
import { resendDelivery } from './webhooks/admin.js';

type Env = { Variables: { reviewer: { id: string; name: string; csrf: string } } };

/** A part of a partner's production page another part of the service adds (its HTML, escaped by it). */
export type PartnerSection = (partnerId: string) => Promise<string>;

const html = (c: Context<Env>, body: string, status: 200 | 400 | 404 | 409 = 200) =>
  c.html(body, status, {
    'content-security-policy': uiContentSecurityPolicy,
    'referrer-policy': 'same-origin',
    'cache-control': 'no-store',
  });

/**
 * The reviewer UI's production pages (behind the UI's sign-in, CSRF and origin checks, which cover
 * `/ui/*`): a partner's production standing, its decisions with their signed statements, revocation
 * with a note; the webhooks, every delivery with its attempts, and sending one again.
 */
export function mountProductionUi(
  // biome-ignore lint/suspicious/noExplicitAny: mounted on the service's one app
  app: Hono<any>,
  deps: {
    db: Database;
    /** The production rule (`production.decide`): a revocation goes through it. */
    decide: (request: DecisionRequest) => Promise<DecisionOutcome>;
    noticeDays: number;
    /** Wakes the webhook dispatcher (after a delivery is sent again). */
    nudge: () => void;
    /** Parts shown below the decisions (the regressions). */
    sections?: ReadonlyArray<PartnerSection>;
  },
) {
  const { db } = deps;

  app.get('/ui/partners/:id/production', async (c: Context<Env>) => {
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
  });

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

  app.get('/ui/webhooks', async (c: Context<Env>) => {
    const reviewer = c.get('reviewer');
    const hooks = await db.query<{ id: string; url: string; events: string[]; created_at: string }>(
      'SELECT id, url, events, created_at FROM webhooks ORDER BY created_at, id',
    );
    const deliveries = await db.query<DeliveryRow>(`${deliverySelect} ORDER BY d.seq DESC LIMIT 200`);
    return html(
      c,
      page(
        'Webhooks',
        `<p class="muted">Endpoints are added with <code>partner-certification-service admin add-webhook --url URL</code>.</p>
<table><thead><tr><th>Webhook</th><th>URL</th><th>Events</th><th>Added</th></tr></thead><tbody>${
          hooks
            .map(
              (w) =>
                `<tr><td>${h(w.id)}</td><td><code>${h(w.url)}</code></td><td>${h(w.events.join(', '))}</td><td>${h(iso(w.created_at))}</td></tr>`,
            )
            .join('\n') || '<tr><td colspan="4" class="muted">No webhook yet.</td></tr>'
        }</tbody></table>
<h2>Deliveries (newest 200)</h2>${deliveryTable(deliveries)}`,
        reviewer,
      ),
    );
  });

  app.get('/ui/webhooks/deliveries/:id', async (c: Context<Env>) => {
    const reviewer = c.get('reviewer');
    const [delivery] = await db.query<DeliveryRow>(`${deliverySelect} WHERE d.id = $1`, [c.req.param('id')]);
    if (!delivery) return html(c, page('No such delivery', '<p>No delivery has this id.</p>', reviewer), 404);
    const attempts = await db.query<{
      attempt: number;
      at: string;
      duration_ms: number;
      status: number | null;
      error: string | null;
      response_excerpt: string | null;
      next_attempt_at: string | null;
    }>(
      'SELECT attempt, at, duration_ms, status, error, response_excerpt, next_attempt_at FROM webhook_attempts WHERE delivery_id = $1 ORDER BY id DESC LIMIT 500',
      [delivery.id],
    );
    return html(
      c,
      page(
        `Delivery ${delivery.id}`,
        `${deliveryTable([delivery])}
<form method="post" action="/ui/webhooks/deliveries/${h(delivery.id)}/resend"><input type="hidden" name="csrf" value="${h(reviewer.csrf)}">
<p><button>Send again</button> <span class="muted">with the same webhook-id ${h(delivery.event_id)}, as soon as possible</span></p></form>
<h2>Attempts</h2><table><thead><tr><th>#</th><th>When</th><th>Took</th><th>Answer</th><th>Error</th><th>Response (start)</th><th>Next try</th></tr></thead><tbody>${
          attempts
            .map(
              (a) =>
                `<tr><td>${a.attempt}</td><td>${h(iso(a.at))}</td><td>${a.duration_ms} ms</td><td>${h(a.status ?? '—')}</td><td>${h(a.error ?? '')}</td><td><code>${h(a.response_excerpt ?? '')}</code></td><td>${h(iso(a.next_attempt_at) ?? '—')}</td></tr>`,
            )
            .join('\n') || '<tr><td colspan="7" class="muted">Not attempted yet.</td></tr>'
        }</tbody></table>`,
        reviewer,
      ),
    );
  });

  app.post('/ui/webhooks/deliveries/:id/resend', async (c: Context<Env>) => {
    const id = c.req.param('id') ?? '';
    const reviewer = c.get('reviewer');
    if (!(await resendDelivery(db, id)))
      return html(
        c,
        page(
          'Not sent again',
          '<p class="error">No such delivery, or it is being attempted right now.</p>',
          reviewer,
        ),
        409,
      );
    await db.query('INSERT INTO audit_log (actor, action, subject, detail) VALUES ($1, $2, $3, $4)', [
      `reviewer:${reviewer.id}`,
      'webhook.resend',
      id,
      '{}',
    ]);
    deps.nudge();
    return c.redirect(`/ui/webhooks/deliveries/${encodeURIComponent(id)}`, 303);
  });
}

interface DeliveryRow {
  id: string;
  event_id: string;
  type: string;
  partner_id: string;
  url: string;
  status: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: string;
  delivered_at: string | null;
}

const deliverySelect = `SELECT d.id, d.event_id, ev.type, ev.partner_id, w.url, d.status, d.attempts, d.last_status, d.last_error,
  d.next_attempt_at, d.delivered_at FROM webhook_deliveries d JOIN webhook_events ev ON ev.id = d.event_id JOIN webhooks w ON w.id = d.webhook_id`;

function deliveryTable(rows: DeliveryRow[]): string {
  return `<table><thead><tr><th>Delivery</th><th>Event</th><th>Partner</th><th>To</th><th>Status</th><th>Attempts</th><th>Last answer</th><th>Next try / delivered</th></tr></thead><tbody>${
    rows
      .map(
        (
          d,
        ) => `<tr><td><a href="/ui/webhooks/deliveries/${h(d.id)}">${h(d.id)}</a></td><td>${h(d.type)} <span class="muted">${h(d.event_id)}</span></td>
<td><a href="/ui/partners/${h(d.partner_id)}/production">${h(d.partner_id)}</a></td><td><code>${h(d.url)}</code></td><td class="${h(d.status === 'delivered' ? 'approved' : d.status === 'failed' ? 'rejected' : '')}">${h(d.status)}</td>
<td>${d.attempts}</td><td>${h(d.last_status ?? '—')} ${h(d.last_error ?? '')}</td><td>${h(d.status === 'delivered' ? iso(d.delivered_at) : d.status === 'pending' ? iso(d.next_attempt_at) : '—')}</td></tr>`,
      )
      .join('\n') || '<tr><td colspan="8" class="muted">No delivery yet.</td></tr>'
  }</tbody></table>`;
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
