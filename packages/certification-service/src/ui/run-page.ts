import { keysOf, parseEnvelope, verifyAttestation } from '@partner-lending/conformance';
import type { Database } from '../db/database.js';
import { jwksOf } from '../keys.js';
import { type DigestedPlan, planScopes } from '../plan/plan.js';
import { approvalOf, type Coverage, coverageOf } from '../production/approvability.js';
import { listDecisions } from '../production/decisions/decisions.js';
import { standingApproval } from '../production/decisions/signed.js';
import { iso } from '../runs/runs.js';
import { h } from '../web/html.js';

/** A run as the reviewer UI reads it. */
export interface UiRun {
  id: string;
  partner_id: string;
  partner_name: string;
  status: string;
  verdict: string | null;
  certify: boolean;
  attestation: string | null;
  session_text: string | null;
  session_sha256: string | null;
  report_json: string | null;
  plan: DigestedPlan | null;
  created_at: string;
  finished_at: string | null;
  integration: { name?: string; version?: string } | null;
}

export async function runForUi(db: Database, id: string | undefined): Promise<UiRun | undefined> {
  const [run] = await db.query<UiRun>(
    `SELECT r.id, r.partner_id, p.name AS partner_name, r.status, r.verdict, r.certify, r.attestation, r.session_text,
       r.session_sha256, r.report_json, r.plan, r.created_at, r.finished_at, r.integration
     FROM runs r JOIN partners p ON p.id = r.partner_id WHERE r.id = $1`,
    [id ?? ''],
  );
  return run;
}

/** The attestation checked here, against this service's own JWKS and the session it serves. */
async function signatureOf(
  db: Database,
  run: UiRun,
): Promise<{ ok: boolean; kid?: string | undefined; problems: string[] }> {
  if (!run.attestation || run.session_text === null) return { ok: false, problems: ['no attestation yet'] };
  try {
    const envelope = parseEnvelope(run.attestation);
    const verification = verifyAttestation(envelope, keysOf(await jwksOf(db)), Buffer.from(run.session_text));
    return {
      ok: verification.ok,
      kid: envelope.signatures[0]?.keyid,
      problems: verification.problems,
    };
  } catch (error) {
    return { ok: false, problems: [(error as Error).message] };
  }
}

const coverageHtml = (coverage: Coverage, plan: DigestedPlan | null): string => {
  const planned = new Set<string>(plan?.operations.map((item) => item.operationId));
  const operations = coverage.operations
    .map(
      (item) =>
        `<tr><td>${h(item.operationId)}${planned.has(item.operationId) ? '' : ' <span class="muted">(not in the plan)</span>'}</td><td>${h(item.calls)}</td><td class="${item.succeeded > 0 ? 'PASS' : planned.has(item.operationId) ? 'FAIL' : ''}">${h(item.succeeded)}</td></tr>`,
    )
    .join('\n');
  const scenarios = coverage.scenarios
    .map(
      (item) =>
        `<tr><td>${h(item.id)}</td><td class="${item.met ? 'PASS' : 'FAIL'}">${item.met ? 'met' : 'not met'}</td><td>${h(item.detail ?? '')}</td></tr>`,
    )
    .join('\n');
  return `<h2>Coverage</h2>
<table id="operations"><thead><tr><th>Operation</th><th>Calls</th><th>Successes</th></tr></thead><tbody>${operations || '<tr><td colspan="3" class="muted">No operation recorded.</td></tr>'}</tbody></table>
<h3>Scenarios</h3>
<table id="scenarios"><thead><tr><th>Scenario</th><th>Met</th><th>Detail</th></tr></thead><tbody>${scenarios || '<tr><td colspan="3" class="muted">No scenario played.</td></tr>'}</tbody></table>
<p id="must-not-verified">Must checks not verified: ${coverage.mustNotVerified.length > 0 ? `<span class="FAIL">${h(coverage.mustNotVerified.join(', '))}</span>` : 'none'}</p>`;
};

/** The run page: everything a reviewer needs to decide on this run alone. */
export async function runPageBody(
  db: Database,
  run: UiRun,
  reviewer: { csrf: string },
  publicUrl: string,
): Promise<string> {
  const { approvable, notApprovable } = approvalOf(run);
  const report = run.report_json ? JSON.parse(run.report_json) : null;
  const signature = await signatureOf(db, run);
  const decisions = (await listDecisions(db, run.partner_id)).filter((item) => item.runId === run.id);
  const open = run.status === 'open' || run.status === 'closing';
  // The partner's production access rests on this run: a rejection would not end it, revoking does.
  const standing = await standingApproval(db, run.partner_id);
  const inForce = standing !== undefined && standing.run_id === run.id;
  const production = `/ui/partners/${h(run.partner_id)}/production`;
  const opens =
    approvable && run.plan
      ? `<p id="opens">Approving opens production for the scopes this run certified: ${planScopes(run.plan)
          .map((scope) => `<code>${h(scope)}</code>`)
          .join(' ')}.</p>`
      : '';
  const form = open
    ? '<p class="muted">The run is still open: it can be decided on once it is judged.</p>'
    : inForce
      ? `<p id="in-force">The partner's production approval <code>${h(String(standing.id))}</code> rests on this run: to end it, <a href="${production}">revoke it on the partner's production page</a> (a rejection does not end an approval).</p>`
      : `${opens}<form method="post" action="/ui/runs/${h(run.id)}/decision">
<input type="hidden" name="csrf" value="${h(reviewer.csrf)}">
<p><label for="note">Note (required, recorded with your name and the time)</label><textarea id="note" name="note" maxlength="2000" required></textarea></p>
${approvable ? '<button name="decision" value="approved">Approve for production</button>' : ''}
<button name="decision" value="rejected">Reject</button></form>`;
  return `<table><tbody>
<tr><th>Partner</th><td><a href="/ui/partners/${h(run.partner_id)}">${h(run.partner_name)}</a> <span class="muted">${h(run.partner_id)}</span></td></tr>
<tr><th>Kind</th><td id="kind">${run.certify ? 'certification run' : 'practice run (never approvable)'}</td></tr>
<tr><th>Plan</th><td id="plan">${run.plan ? `${h(run.plan.id)} <code>${h(run.plan.digest)}</code>` : '<span class="muted">none: the partner chose the settings</span>'}</td></tr>
<tr><th>Status</th><td>${h(open ? 'open' : run.status)}</td></tr>
<tr><th>Verdict</th><td class="${h(run.verdict)}">${h(run.verdict ?? '—')}</td></tr>
<tr><th>Integration</th><td>${h([run.integration?.name, run.integration?.version].filter(Boolean).join(' ') || '—')}</td></tr>
<tr><th>Created / finished</th><td>${h(iso(run.created_at))} / ${h(iso(run.finished_at) ?? '—')}</td></tr>
<tr><th>Session SHA-256</th><td><code>${h(run.session_sha256 ?? '—')}</code></td></tr>
<tr><th>Signature</th><td id="signature">${
    run.attestation
      ? signature.ok
        ? `<span class="PASS">verified</span> against this service’s JWKS, key <code>${h(signature.kid)}</code>`
        : `<span class="FAIL">does not verify</span>: ${h(signature.problems.join('; '))}`
      : '<span class="muted">not signed yet</span>'
  }</td></tr>
<tr><th>Approvable</th><td id="approvable">${
    approvable
      ? '<span class="PASS">yes</span>'
      : `<span class="FAIL">no</span><ul>${notApprovable.map((reason) => `<li>${h(reason)}</li>`).join('')}</ul>`
  }</td></tr>
</tbody></table>
${report ? coverageHtml(coverageOf(report), run.plan) : ''}
${
  run.attestation
    ? `<p><a href="/ui/runs/${h(run.id)}/report.html">Open the report</a> · <a href="/ui/runs/${h(run.id)}/attestation">Download the attestation</a> · <a href="/ui/runs/${h(run.id)}/session">Download the session</a></p>
<p class="muted">Verify offline: <code>partner-conformance verify ${h(run.id)}.attestation.json --keys ${h(publicUrl)}/.well-known/jwks.json --session ${h(run.id)}.session.json</code></p>`
    : ''
}
<h2>Decisions on this run</h2>${
    decisions.length === 0
      ? '<p class="muted">None yet.</p>'
      : `<ul>${decisions.map((item) => `<li><span class="${h(item.decision)}">${h(item.decision)}</span> by ${h(item.reviewer?.name ?? 'the service')}, ${h(item.at)}: ${h(item.note)}</li>`).join('')}</ul>`
  }
<h2>Decide</h2>${form}`;
}
