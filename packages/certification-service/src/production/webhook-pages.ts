import type { Context, Hono } from 'hono';
import { writeAudit } from '../audit.js';
import type { Database } from '../db/database.js';
import { iso } from '../runs/runs.js';
import { h, page } from '../web/html.js';
import { resendDelivery } from './webhooks/admin.js';

type Env = { Variables: { reviewer: { id: string; name: string; csrf: string } } };

/**
 * The reviewer UI's webhook pages (behind the UI's sign-in, CSRF and origin checks): the webhooks,
 * every delivery with its attempts, and sending one again. `html` answers with the production pages'
 * headers.
 */
export function mountWebhookPages(
  // biome-ignore lint/suspicious/noExplicitAny: mounted on the service's one app
  app: Hono<any>,
  deps: {
    db: Database;
    /** Wakes the webhook dispatcher (after a delivery is sent again). */
    nudge: () => void;
    html: (c: Context<Env>, body: string, status?: 200 | 404 | 409) => Response | Promise<Response>;
  },
) {
  const { db, html } = deps;

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
    await writeAudit(db, {
      actor: `reviewer:${reviewer.id}`,
      action: 'webhook.resend',
      subject: id,
      detail: {},
    });
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
