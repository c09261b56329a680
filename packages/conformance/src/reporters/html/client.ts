import type { ClientSession } from '../../client/session.js';
import { phasesPlan } from '../../client/stage/scenarios.js';
import { attestationOf, type ClientReport, decisionLines } from '../../common/report.js';
import { coverageLines } from '../coverage.js';
import { headHtml, htmlEscape, num, provenanceHtml, sectionsHtml, verdictHtml } from './page.js';
import { timelineSvg } from './timeline.js';

/** The self-contained HTML report of a client run: verdict, journey, scenario plan, timeline, checks. */
export function formatClientHtmlReport(report: ClientReport, session: ClientSession): string {
  const command =
    report.journey.command.length > 0
      ? report.journey.command.join(' ')
      : '(none: the stage recorded what arrived)';
  const handled = handledRows(report);
  const { provenance } = report;
  return `<!doctype html>
<html lang="en">
<head>
${headHtml(`Partner Lending integration certification — ${command}`)}
</head>
<body>
<h1>Partner Lending integration certification</h1>
${verdictHtml(report)}
<p class="provenance-mark"><strong>${htmlEscape(attestationOf(provenance).mark)}</strong></p>
<h2>Coverage</h2>
<ul class="coverage">
${coverageLines(report)
  .map((line) => `<li>${htmlEscape(line)}</li>`)
  .join('\n')}
</ul>
${
  handled
    ? `<div class="scroll"><table><thead><tr><th>scenario</th><th>played</th><th>judged by</th><th>handled</th><th>why</th></tr></thead><tbody>
${handled}
</tbody></table></div>`
    : ''
}
<h2>Decision</h2>
<ul class="decision">
${decisionLines(report)
  .map((line) => `<li>${htmlEscape(line)}</li>`)
  .join('\n')}
</ul>
<div class="scroll"><table><thead><tr><th>operation</th><th>calls</th><th>2xx</th><th>other answers</th><th>in this report</th></tr></thead><tbody>
${operationRows(report)}
</tbody></table></div>
<h2>Run</h2>
${runHtml(report, command)}
<h2>Scenario plan</h2>
<p><strong>Phases</strong>: ${htmlEscape(phasesPlan(report.stage.ttlSeconds, report.stage.longTtlSeconds, report.stage.shortPhaseMs))}.</p>
<div class="scroll"><table><thead><tr><th>step</th><th>in this session</th><th>what the stage does</th></tr></thead><tbody>
${scenarioRows(report)}
</tbody></table></div>
<h2>Timeline</h2>
${timelineSvg(session)}
<p class="muted">A check is <em>passed</em> only when the journey reached what it judges; otherwise it is <em>not verified</em>, with the reason (in the JSON report its status is <code>skipped</code>). The session file (<code>--save-session</code>) lets anyone judge the same traffic again: <code>partner-conformance client --judge FILE</code>.</p>
${sectionsHtml(report)}
</body>
</html>
`;
}

/** The scenario plan's rows: each step, whether and when it fired, what the stage does. */
function scenarioRows(report: ClientReport): string {
  return report.scenarios
    .map(
      (item) =>
        `<tr><td><code>${htmlEscape(item.name)}</code></td><td>${item.enabled ? (item.firedAt !== undefined ? `fired at ${num(item.firedAt / 1000, 2)} s (#${num(item.seq)})` : 'not reached by the journey') : 'not selected'}</td><td>${htmlEscape(item.plan)}</td></tr>`,
    )
    .join('\n');
}

/** The operations' rows: calls, successes and refusals of each, and whether the report certifies it. */
function operationRows(report: ClientReport): string {
  return report.operations
    .map(
      (operation) =>
        `<tr class="${operation.exercised ? 'passed' : 'skipped'}"><td><code>${htmlEscape(operation.operationId)}</code><br><span class="muted">${htmlEscape(operation.method)} ${htmlEscape(operation.path)}</span></td><td>${num(operation.calls)}</td><td>${num(operation.successes)}</td><td>${
          Object.entries(operation.refusals)
            .map(([status, count]) => `${num(count)} × ${status === '0' ? 'no answer' : htmlEscape(status)}`)
            .join(', ') || '—'
        }</td><td>${operation.exercised ? 'certified on it' : '<strong>not exercised successfully</strong>: this report certifies nothing about it'}</td></tr>`,
    )
    .join('\n');
}

/**
 * The coverage's scenario rows, played and handled apart: a scenario is met only when the check the
 * plan names for it passed. Empty without a plan's coverage.
 */
function handledRows(report: ClientReport): string {
  return (report.coverage?.scenarios ?? [])
    .map(
      (item) =>
        `<tr class="${item.met ? 'passed' : item.outcome === 'not-handled' ? 'failed' : 'skipped'}"><td><code>${htmlEscape(item.id)}</code></td><td>${item.played === undefined ? '—' : item.played ? 'yes' : '<strong>no</strong>'}</td><td>${
          (item.checks ?? (item.check ? [item.check] : []))
            .map(
              (check) =>
                `<code>${htmlEscape(check.id)}</code> ${htmlEscape(check.status === 'skipped' ? 'not verified' : check.status)}`,
            )
            .join('<br>') || '—'
        }</td><td>${htmlEscape(item.outcome ?? (item.met ? 'met' : 'not met'))}</td><td>${htmlEscape(item.detail ?? '')}</td></tr>`,
    )
    .join('\n');
}

/** The run's facts: integration, provenance, tool and rules, the journey and its calls, the stage, the summary. */
function runHtml(report: ClientReport, command: string): string {
  const { passed, failed, skipped, errored } = report.summary;
  const { journey, provenance, integration } = report;
  const ending =
    journey.ending === 'exited'
      ? `exited with ${journey.exitCode ?? `signal ${journey.signal}`}`
      : `${journey.ending}${journey.note ? `: ${journey.note}` : ''}`;
  return `<dl>
<dt>Integration</dt><dd>${integration?.name || integration?.version ? htmlEscape([integration.name, integration.version].filter(Boolean).join(' — ')) : '<span class="muted">not named (--partner, --integration-version)</span>'}</dd>
<dt>Attested</dt><dd><strong>${attestationOf(provenance).attested ? 'yes' : 'no'}</strong>: ${htmlEscape(attestationOf(provenance).mark)}</dd>
<dt>Provenance</dt><dd><strong>${htmlEscape(provenance.source === 'live' ? 'live run' : provenance.source === 'rejudged' ? 'judged again from a session file' : 'certification service')}</strong>${provenance.sessionFile ? ` (<code>${htmlEscape(provenance.sessionFile)}</code>)` : ''}: ${htmlEscape(provenance.note)}</dd>
<dt>Session SHA-256</dt><dd><code>${htmlEscape(provenance.sessionSha256)}</code></dd>
<dt>Tool</dt><dd>${htmlEscape(report.tool.name)} ${htmlEscape(report.tool.version)} (client mode)</dd>
<dt>Rules</dt><dd>Partner Lending API — Authentication and Access; the OAuth 2.0, bearer-token, JWT and HTTP RFCs</dd>
<dt>Spec SHA-256</dt><dd><code>${htmlEscape(report.spec.sha256)}</code></dd>
<dt>Journey</dt><dd><code>${htmlEscape(command)}</code></dd>
<dt>Ended</dt><dd>${htmlEscape(ending)} after ${num(journey.durationMs / 1000, 2)} s${journey.survivors ? `; <strong>${num(journey.survivors.length)} process(es) had left the journey's process group and outlived it</strong> (stopped): <code>${htmlEscape(journey.survivors.join('; '))}</code>` : ''}</dd>
<dt>Calls</dt><dd>${num(journey.calls.token)} token requests, ${num(journey.calls.api)} API calls, ${num(journey.calls.other)} other requests${report.recording.dropped > 0 ? `; ${num(report.recording.dropped)} exchanges past the cap of ${num(report.recording.maxExchanges)} were not recorded` : ''}${report.recording.clamped ? `; ${num(report.recording.clamped)} recorded values were shortened to the session's bounds (marked “…[N chars]”)` : ''}</dd>
<dt>Stage</dt><dd>token endpoint <code>${htmlEscape(report.stage.authUrl)}/oauth/token</code>, partner API <code>${htmlEscape(report.stage.baseUrl)}</code>, partner <code>${htmlEscape(report.stage.partnerId)}</code>, authorised ${htmlEscape(report.stage.authorizedScopes.join(' '))}, tokens live ${num(report.stage.ttlSeconds)} s for the first ${num(report.stage.shortPhaseMs / 1000, 0)} s, then ${num(report.stage.longTtlSeconds)} s</dd>
<dt>Date</dt><dd>${htmlEscape(report.startedAt)}</dd>
${provenanceHtml(report)}
<dt>Summary</dt><dd>${report.checks.length} checks: ${passed} passed, ${failed} failed, ${skipped} not verified, ${errored} errored</dd>
</dl>`;
}
