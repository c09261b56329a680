import type { Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { Database } from '../db/database.js';
import { type Audit, reportResponse } from '../http/api.js';
import type { OidcSignIn } from '../oidc/oidc.js';
import { checkNote } from '../production/decisions/note.js';
import type { Production } from '../production/index.js';
import { registerEntries } from '../production/register/register.js';
import { iso } from '../runs/runs.js';
import { derivedSecret, hashSecret, newSecret, sameText } from '../secrets.js';
import type { SigninGuard } from '../signin/signin-guard.js';
import { h, page, stylesheet, uiContentSecurityPolicy, wantsProblem } from '../web/html.js';
import { problem } from '../web/problem.js';
import { mountUiRedirects } from './addresses.js';
import { auditPage } from './audit.js';
import { runForUi, runPageBody } from './run-page.js';

const cookieName = 'pcs_session';
/** A reviewer's sign-in lasts this long. */
const sessionHours = 8;

interface Reviewer {
  id: string;
  name: string;
  csrf: string;
}

type Env = { Variables: { reviewer: Reviewer } };

const html = (c: Context, body: string, status: 200 | 400 | 401 | 403 | 404 | 409 | 429 = 200) =>
  c.html(body, status, {
    'content-security-policy': uiContentSecurityPolicy,
    'x-content-type-options': 'nosniff',
    // same-origin, not no-referrer: under no-referrer a browser sends `Origin: null` with the UI's own
    // forms, and the origin check below would refuse them.
    'referrer-policy': 'same-origin',
    'cache-control': 'no-store',
  });

/**
 * The reviewer UI: sign in with a credential from `admin add-reviewer`; partners and the state of their
 * latest attested run; a partner's runs; a run's report and attestation; approve or reject with a note
 * on an attested run; the audit log. Every form carries the session's CSRF token, and every POST must
 * come from this origin.
 */
export function mountUi(
  app: Hono<Env>,
  deps: {
    db: Database;
    publicUrl: string;
    audit: Audit;
    signin: SigninGuard;
    oidc?: OidcSignIn;
    /** The production rule: approving or rejecting a run goes through `decide` (see production/decide.ts). */
    production: Pick<Production, 'decide'>;
  },
) {
  const { db } = deps;
  const secure = deps.publicUrl.startsWith('https:');
  const origin = new URL(deps.publicUrl).origin;

  app.get('/ui.css', (c) =>
    c.body(stylesheet, 200, {
      'content-type': 'text/css; charset=utf-8',
      'cache-control': 'public, max-age=3600',
    }),
  );

  // Forms of the UI: small, urlencoded, from this origin (SameSite cookies and the CSRF token do the rest).
  app.use('/signin', bodyLimit({ maxSize: 8 * 1024, onError: (c) => c.text('form too large', 413) }));
  app.use('/ui/*', bodyLimit({ maxSize: 8 * 1024, onError: (c) => c.text('form too large', 413) }));
  const fromHere = (c: Context) => {
    const from = c.req.header('origin') ?? c.req.header('referer');
    return from !== undefined && safeOrigin(from) === origin;
  };

  const startSession = async (c: Context, reviewerId: string) => {
    const token = newSecret('pcs_session');
    await db.query(
      `INSERT INTO reviewer_sessions (token_hash, reviewer_id, expires_at) VALUES ($1, $2, now() + interval '${sessionHours} hours')`,
      [hashSecret(token), reviewerId],
    );
    await db.query('DELETE FROM reviewer_sessions WHERE expires_at < now()');
    setCookie(c, cookieName, token, {
      httpOnly: true,
      sameSite: 'Strict',
      secure,
      path: '/',
      maxAge: sessionHours * 3600,
    });
  };
  // With --oidc-issuer, reviewers sign in through the identity provider only (see src/oidc).
  deps.oidc?.mount(app, { startSession, html, signin: deps.signin });
  const oidcPage = () =>
    page(
      'Sign in',
      `<p><a href="/signin/oidc" id="oidc-signin">Sign in with your organisation's account</a></p><p class="muted">${h(deps.oidc?.issuer)}</p>`,
    );
  app.get('/signin', (c) => html(c, deps.oidc ? oidcPage() : signinPage()));
  app.post('/signin', async (c) => {
    if (deps.oidc) return html(c, oidcPage(), 403);
    if (!fromHere(c)) return html(c, signinPage('This form must be sent from this site.'), 403);
    // Guessing is slowed before the credential is looked at (see signin-guard.ts).
    const address = deps.signin.addressOf(c);
    const wait = await deps.signin.throttled(address);
    if (wait > 0) {
      const answer = html(c, signinPage(`Too many failed sign-ins: try again in ${wait} s.`), 429);
      answer.headers.set('retry-after', String(wait));
      return answer;
    }
    const form = await c.req.parseBody();
    const credential = typeof form.credential === 'string' ? form.credential.trim() : '';
    const [reviewer] = credential
      ? await db.query<{ id: string; name: string }>(
          'SELECT id, name FROM reviewers WHERE credential_hash = $1',
          [hashSecret(credential)],
        )
      : [];
    if (!reviewer) {
      await deps.signin.failed(address);
      return html(c, signinPage('That credential is not valid.'), 401);
    }
    await startSession(c, reviewer.id);
    await deps.audit(`reviewer:${reviewer.id}`, 'signin', null, {});
    return c.redirect('/ui/partners', 303);
  });

  // Everything else of the UI needs a signed-in reviewer; a POST also needs this origin and the CSRF token.
  const signedIn = async (c: Context<Env>, next: () => Promise<void>) => {
    const token = getCookie(c, cookieName);
    const [session] = token
      ? await db.query<{ id: string; name: string }>(
          `SELECT r.id, r.name FROM reviewer_sessions s JOIN reviewers r ON r.id = s.reviewer_id
           WHERE s.token_hash = $1 AND s.expires_at > now()`,
          [hashSecret(token)],
        )
      : [];
    if (!session) {
      if (c.req.method === 'GET') return c.redirect('/signin', 303);
      return html(c, page('Signed out', '<p>Sign in again: <a href="/signin">sign in</a>.</p>'), 401);
    }
    // The CSRF token is bound to the session without being stored: an HMAC keyed by the session token,
    // which only the reviewer's cookie holds (the database has its hash).
    const csrf = derivedSecret(token!, 'csrf', 'reviewer UI');
    c.set('reviewer', { id: session.id, name: session.name, csrf });
    if (c.req.method === 'POST') {
      const form = await c.req.parseBody();
      if (!fromHere(c) || typeof form.csrf !== 'string' || !sameText(form.csrf, csrf))
        return html(
          c,
          page(
            'Refused',
            '<p class="error">This form was not sent from this site’s page (CSRF check failed). Reload the page and try again.</p>',
            c.get('reviewer'),
          ),
          403,
        );
    }
    await next();
  };
  mountUiRedirects(app);
  for (const path of ['/ui/*', '/signout']) app.use(path, signedIn);

  app.post('/signout', async (c) => {
    const token = getCookie(c, cookieName);
    if (token) await db.query('DELETE FROM reviewer_sessions WHERE token_hash = $1', [hashSecret(token)]);
    deleteCookie(c, cookieName, { path: '/', secure });
    await deps.audit(`reviewer:${c.get('reviewer').id}`, 'signout', null, {});
    return c.redirect('/signin', 303);
  });

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

  app.get('/ui/runs/:id', async (c) => {
    const run = await runForUi(db, c.req.param('id'));
    if (!run) return html(c, page('No such run', '<p>No run has this id.</p>', c.get('reviewer')), 404);
    const reviewer = c.get('reviewer');
    return html(c, page(`Run ${run.id}`, await runPageBody(db, run, reviewer, deps.publicUrl), reviewer));
  });

  for (const [suffix, column, type] of [
    ['report.html', 'report_html', 'html'],
    ['attestation', 'attestation', 'application/json'],
    ['session', 'session_text', 'application/json'],
  ] as const)
    app.get(`/ui/runs/:id/${suffix}`, async (c) => {
      const [row] = await db.query<Record<string, string | null>>(
        `SELECT ${column} AS content FROM runs WHERE id = $1`,
        [c.req.param('id')],
      );
      if (!row?.content)
        return html(
          c,
          page('Not available', '<p>No such run, or it is not judged yet.</p>', c.get('reviewer')),
          404,
        );
      if (type === 'html') return reportResponse(row.content);
      return new Response(row.content, {
        headers: {
          'content-type': type,
          'content-disposition': `attachment; filename="${c.req.param('id')}.${suffix === 'session' ? 'session' : 'attestation'}.json"`,
          'x-content-type-options': 'nosniff',
          'content-security-policy': "default-src 'none'",
        },
      });
    });

  app.post('/ui/runs/:id/decision', async (c) => {
    const reviewer = c.get('reviewer');
    const form = await c.req.parseBody();
    const decision = form.decision === 'approved' || form.decision === 'rejected' ? form.decision : undefined;
    const checked = checkNote(form.note);
    const run = await runForUi(db, c.req.param('id'));
    if (!run) return html(c, page('No such run', '<p>No run has this id.</p>', reviewer), 404);
    const back = `<p><a href="/ui/runs/${h(run.id)}">Back to the run</a></p>`;
    if (!decision || 'problem' in checked) {
      const detail = !decision
        ? 'A decision is "approved" or "rejected" (the Approve and Reject buttons), with a note.'
        : (checked as { problem: string }).problem;
      if (wantsProblem(c)) return problem(c, 400, 'Decision not recorded', detail);
      return html(c, page('Not recorded', `<p class="error">${h(detail)}</p>${back}`, reviewer), 400);
    }
    const outcome = await deps.production.decide({ decision, run, reviewer, note: checked.note });
    if (!outcome.recorded) {
      if (outcome.refusal === 'not-attested')
        return html(
          c,
          page(
            'Not recorded',
            `<p class="error">The run is not judged and attested yet.</p>${back}`,
            reviewer,
          ),
          409,
        );
      if (outcome.refusal === 'not-approvable')
        return html(
          c,
          page(
            'Not approved',
            `<p class="error">This run cannot be approved:</p><ul class="error">${outcome.reasons.map((reason) => `<li>${h(reason)}</li>`).join('')}</ul>${back}`,
            reviewer,
          ),
          409,
        );
      if (outcome.refusal === 'repeated')
        return html(
          c,
          page('Not recorded', `<p class="error">Not recorded: ${h(outcome.message)}.</p>${back}`, reviewer),
          409,
        );
      if (outcome.refusal === 'approval-in-force') {
        if (wantsProblem(c)) return problem(c, 409, 'Decision not recorded', `${outcome.message}.`);
        const production = `/ui/partners/${encodeURIComponent(run.partner_id)}/production`;
        return html(
          c,
          page(
            'Not recorded',
            `<p class="error" id="in-force">Not recorded: ${h(outcome.message)}: <a href="${h(production)}">Revoke it there</a>.</p>${back}`,
            reviewer,
          ),
          409,
        );
      }
    }
    return c.redirect(`/ui/partners/${encodeURIComponent(run.partner_id)}`, 303);
  });

  app.get('/ui/audit', async (c) => html(c, await auditPage(db, c.req.query(), c.get('reviewer'))));
}

function safeOrigin(value: string): string | undefined {
  try {
    return new URL(value).origin;
  } catch {
    return undefined;
  }
}

function signinPage(error?: string): string {
  return page(
    'Sign in',
    `${error ? `<p class="error">${h(error)}</p>` : ''}<form method="post" action="/signin">
<p><label for="credential">Reviewer credential (from <code>partner-certification-service admin add-reviewer</code>)</label><br>
<input id="credential" name="credential" type="password" autocomplete="current-password" size="60" required></p>
<button>Sign in</button></form>`,
  );
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
