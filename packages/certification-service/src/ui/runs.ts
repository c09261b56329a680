import type { Context, Hono } from 'hono';
import type { Database } from '../db/database.js';
import { reportResponse } from '../http/api.js';
import { checkNote } from '../production/decisions/note.js';
import type { Production } from '../production/index.js';
import { h, page, wantsProblem } from '../web/html.js';
import { problem } from '../web/problem.js';
import { type Env, html, type Reviewer } from './answer.js';
import { runForUi, runPageBody } from './run-page.js';

/** A run's page, its report, attestation and session, and the decision form's POST (through `decide`). */
export function mountRunPages(
  app: Hono<Env>,
  deps: { db: Database; publicUrl: string; production: Pick<Production, 'decide'> },
) {
  const { db } = deps;
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
      const refused = refusalPage(c, outcome, run.partner_id, reviewer, back);
      if (refused) return refused;
    }
    return c.redirect(`/ui/partners/${encodeURIComponent(run.partner_id)}`, 303);
  });
}

/** The page (or problem) a decision the production rule refused answers with; undefined for none. */
function refusalPage(
  c: Context<Env>,
  outcome: Exclude<Awaited<ReturnType<Production['decide']>>, { recorded: true }>,
  partnerId: string,
  reviewer: Reviewer,
  back: string,
) {
  if (outcome.refusal === 'not-attested')
    return html(
      c,
      page('Not recorded', `<p class="error">The run is not judged and attested yet.</p>${back}`, reviewer),
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
    const production = `/ui/partners/${encodeURIComponent(partnerId)}/production`;
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
