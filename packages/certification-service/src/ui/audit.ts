import type { Queryable } from '../db/database.js';
import { iso } from '../runs/runs.js';
import { fields, h, page } from '../web/html.js';

/** Entries per page of the audit log. */
export const auditPageSize = 100;

/**
 * The audit log page: newest first, `auditPageSize` a page (`before` an entry id: the older ones),
 * filtered by `action` and `subject` (exact), so that no burst of one kind of entry hides another; and
 * apart from it, the security events of the last 24 hours (refused and throttled sign-ins, counted by
 * address and minute), which never enter the audit log.
 */
export async function auditPage(
  db: Queryable,
  query: Record<string, string>,
  reviewer: { name: string; csrf: string },
): Promise<string> {
  const action = printable(query.action, 64);
  const subject = printable(query.subject, 100);
  const before = /^[1-9]\d{0,17}$/.test(query.before ?? '') ? query.before! : undefined;
  const where: string[] = [];
  const params: unknown[] = [];
  if (action) where.push(`action = $${params.push(action)}`);
  if (subject) where.push(`subject = $${params.push(subject)}`);
  if (before) where.push(`id < $${params.push(before)}`);
  const entries = await db.query<{
    id: string;
    at: string;
    actor: string;
    action: string;
    subject: string | null;
    detail: unknown;
    actor_name: string | null;
  }>(
    // The actor's name beside its id: reviewers and partners are named, the service is itself.
    `SELECT a.id, a.at, a.actor, a.action, a.subject, a.detail, coalesce(r.name, p.name) AS actor_name
     FROM audit_log a
     LEFT JOIN reviewers r ON a.actor = 'reviewer:' || r.id
     LEFT JOIN partners p ON a.actor = 'partner:' || p.id
     ${where.length ? `WHERE ${where.map((clause) => `a.${clause}`).join(' AND ')}` : ''}
     ORDER BY a.id DESC LIMIT ${auditPageSize + 1}`,
    params,
  );
  const more = entries.length > auditPageSize;
  const shown = entries.slice(0, auditPageSize);
  const actions = await db.query<{ action: string }>('SELECT DISTINCT action FROM audit_log ORDER BY action');
  const rows = shown
    .map(
      (e) =>
        `<tr><td>${h(iso(e.at))}</td><td>${e.actor_name ? `${h(e.actor_name)} <span class="muted">${h(e.actor)}</span>` : h(e.actor)}</td><td>${h(e.action)}</td><td>${h(e.subject ?? '')}</td><td>${fields(e.detail)}</td></tr>`,
    )
    .join('\n');
  const link = (extra: Record<string, string>) =>
    `/ui/audit?${new URLSearchParams({ ...(action && { action }), ...(subject && { subject }), ...extra })}`;
  const filter = `<form method="get" action="/ui/audit"><label>Action <select name="action"><option value="">any</option>${actions
    .map((item) => `<option${item.action === action ? ' selected' : ''}>${h(item.action)}</option>`)
    .join(
      '',
    )}</select></label> <label>On (run id) <input name="subject" value="${h(subject ?? '')}" size="30"></label> <button>Filter</button></form>`;
  const events = await db.query<{ kind: string; sources: string; total: string; last: string }>(
    `SELECT kind, count(DISTINCT source) AS sources, sum(count) AS total, max(last_at) AS last FROM security_events
     WHERE minute > now() - interval '24 hours' GROUP BY kind ORDER BY kind`,
  );
  const top = await db.query<{ kind: string; source: string; total: string }>(
    `SELECT kind, source, sum(count) AS total FROM security_events WHERE minute > now() - interval '24 hours'
     GROUP BY kind, source ORDER BY sum(count) DESC LIMIT 10`,
  );
  const security = events.length
    ? `<table><thead><tr><th>Event</th><th>Count</th><th>Addresses</th><th>Last</th></tr></thead><tbody>${events
        .map(
          (e) =>
            `<tr><td>${h(e.kind)}</td><td>${h(e.total)}</td><td>${h(e.sources)}</td><td>${h(iso(e.last))}</td></tr>`,
        )
        .join('')}</tbody></table><p class="muted">Most active: ${top
        .map((e) => `${h(e.source)} (${h(e.kind)} × ${h(e.total)})`)
        .join(', ')}</p>`
    : '<p class="muted">None in the last 24 hours.</p>';
  return page(
    'Audit log',
    `${filter}<p class="muted">Newest first, ${auditPageSize} a page${action || subject ? ', filtered' : ''}.</p>
<table><thead><tr><th>When</th><th>Who</th><th>What</th><th>On</th><th>Detail</th></tr></thead><tbody>${rows || '<tr><td colspan="5" class="muted">No entry.</td></tr>'}</tbody></table>
${more ? `<p><a href="${h(link({ before: String(shown.at(-1)!.id) }))}">Older entries</a></p>` : ''}
<h2>Security events (last 24 hours, apart from the log above)</h2>${security}`,
    reviewer,
  );
}

const unprintable =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the pattern finds control characters to refuse them
  /[\u0000-\u001f\u007f]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A query value if it is 1–`max` printable characters, else undefined (the filter is ignored). */
function printable(value: string | undefined, max: number): string | undefined {
  return value && value.length <= max && !unprintable.test(value) ? value : undefined;
}
