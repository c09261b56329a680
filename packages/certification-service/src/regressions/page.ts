import type { Context, Hono } from 'hono';
import type { Database } from '../db/database.js';
import type { Exchange } from '../evidence/exchange.js';
import { h, page, uiContentSecurityPolicy } from '../web/html.js';
import {
  listRegressions,
  type PublicRegression,
  regressionEnvelope,
  regressionStatementResponse,
} from './list.js';

type Env = { Variables: { reviewer: { id: string; name: string; csrf: string } } };

const consequenceText = {
  suspended: 'suspended the partner',
  notified: 'announced (the partner stays active)',
  unchanged: 'announced (the partner was not active: nothing changed)',
} as const;

/** The evidence exchanges as a table: text only, every value escaped, nothing to click. */
function exchangeTable(exchanges: readonly Exchange[]): string {
  const rows = exchanges
    .map(
      (x) =>
        `<tr><td>${h(new Date(x.at).toISOString())}</td><td>${h(x.kind)}</td><td><code>${h(x.method)} ${h(x.path)}</code></td><td>${h(x.status)}</td><td>${h(x.error ?? '')}</td><td>${h(x.retryAfterSeconds ?? '')}</td><td><code>${h((x.scopesGranted ?? []).join(' '))}</code></td><td><code>${h(x.fingerprint ?? '')}</code></td><td>${h(x.reporterId)}</td></tr>`,
    )
    .join('\n');
  return `<table class="evidence"><thead><tr><th>When</th><th>Kind</th><th>Request</th><th>Status</th><th>Error</th><th>Retry-After (s)</th><th>Scopes granted</th><th>Token fingerprint</th><th>Reporter</th></tr></thead><tbody>${
    rows || '<tr><td colspan="9" class="muted">No exchange kept.</td></tr>'
  }</tbody></table>`;
}

function regressionBlock(regression: PublicRegression): string {
  return `<section class="regression" data-regression="${h(regression.id)}"><h3>${h(regression.check)} <span class="muted">${h(regression.id)}</span></h3>
<p>${h(regression.detail)}</p>
<p>Found ${h(regression.at)} on production evidence from ${h(regression.window.from)} to ${h(regression.window.to)}; recorded ${h(regression.recordedAt)}.
Policy <strong>${h(regression.policy)}</strong>: <span data-consequence="${h(regression.consequence)}">${h(consequenceText[regression.consequence])}</span>${
    regression.resolvedAt
      ? `; settled ${h(regression.resolvedAt)} by the approval ${h(regression.resolvedBy ?? '')}`
      : ''
  }. <a href="/ui/regressions/${h(regression.id)}/statement">Signed statement</a></p>
${exchangeTable(regression.exchanges)}</section>`;
}

/**
 * The regressions part of a partner's production page: each regression's check, detail, time, window,
 * the policy applied and what it did, the evidence exchanges as a table, and its signed statement.
 */
export function regressionsSection(db: Database): (partnerId: string) => Promise<string> {
  return async (partnerId) => {
    const regressions = await listRegressions(db, partnerId);
    return `<h2>Regressions on production</h2>${
      regressions.length === 0
        ? '<p class="muted">No regression: no decisive check has failed on production evidence.</p>'
        : regressions.map(regressionBlock).join('\n')
    }`;
  };
}

/** The reviewer UI's regression statement download (behind the UI's sign-in, which covers `/ui/*`). */
// biome-ignore lint/suspicious/noExplicitAny: mounted on the service's one app
export function mountRegressionPages(app: Hono<any>, deps: { db: Database }): void {
  app.get('/ui/regressions/:id/statement', async (c: Context<Env>) => {
    const id = c.req.param('id') ?? '';
    const envelope = await regressionEnvelope(deps.db, id);
    if (envelope === undefined)
      return c.html(page('Not available', '<p>No regression has this id.</p>', c.get('reviewer')), 404, {
        'content-security-policy': uiContentSecurityPolicy,
        'cache-control': 'no-store',
      });
    return regressionStatementResponse(envelope, id);
  });
}
