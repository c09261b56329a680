import type { Report } from '../../common/report.js';
import { headHtml, htmlEscape, provenanceHtml, sectionsHtml, verdictHtml } from './page.js';

export interface HtmlReportMeta {
  /** The kind of target: `embedded mock (deployed)` or `remote`. */
  kind: string;
  /** The token profile observed. */
  profile: string;
  /** What the preflight had to work around. */
  notes?: string[];
}

/**
 * A self-contained HTML certification report: the verdict, then the failed and not-verified checks,
 * then the rest; per check its rule, the cited sentence, the precondition, the details and the
 * evidence (collapsible); the tool version and the spec's SHA-256.
 */
export function formatHtmlReport(report: Report, meta: HtmlReportMeta): string {
  const { passed, failed, skipped, errored } = report.summary;
  const sections = sectionsHtml(report);
  const writes = report.writes.allowed
    ? report.writes.mayHaveCreated.length > 0
      ? `allowed (--allow-writes); these create requests succeeded and may have created data: ${report.writes.mayHaveCreated.join('; ')}`
      : 'allowed (--allow-writes); no create request succeeded'
    : 'not allowed: no request with a body went to a create endpoint';
  return `<!doctype html>
<html lang="en">
<head>
${headHtml(`Partner Lending conformance report — ${report.target.baseUrl}`)}
</head>
<body>
<h1>Partner Lending conformance report</h1>
${verdictHtml(report)}
<dl>
<dt>Tool</dt><dd>${htmlEscape(report.tool.name)} ${htmlEscape(report.tool.version)}</dd>
<dt>Rules</dt><dd>Partner Lending API — Authentication and Access; the OAuth 2.0, bearer-token and JWT RFCs</dd>
<dt>Spec SHA-256</dt><dd><code>${htmlEscape(report.spec.sha256)}</code></dd>
<dt>Target</dt><dd>${htmlEscape(meta.kind)}</dd>
<dt>Auth server</dt><dd><code>${htmlEscape(report.target.authUrl)}</code></dd>
<dt>Partner API</dt><dd><code>${htmlEscape(report.target.baseUrl)}</code></dd>
<dt>Audience</dt><dd><code>${htmlEscape(report.target.audience)}</code></dd>
<dt>Profile</dt><dd>${htmlEscape(meta.profile)}</dd>${(meta.notes ?? []).map((note) => `\n<dt>Preflight</dt><dd>${htmlEscape(note)}</dd>`).join('')}
<dt>Writes</dt><dd>${htmlEscape(writes)}</dd>
<dt>Date</dt><dd>${htmlEscape(report.startedAt)}</dd>
${provenanceHtml(report)}
<dt>Duration</dt><dd>${(report.durationMs / 1000).toFixed(2)} s</dd>
<dt>Summary</dt><dd>${report.checks.length} checks: ${passed} passed, ${failed} failed, ${skipped} not verified, ${errored} errored</dd>${report.stopped ? `\n<dt>Stopped</dt><dd>before any check (${htmlEscape(report.stopped.code)}): ${htmlEscape(report.stopped.reason)}</dd>` : ''}
</dl>
<p class="muted">A check is <em>passed</em> only when its precondition held in this run; otherwise it is <em>not verified</em>, with the reason (in the JSON report its status is <code>skipped</code>). The curl lines fetch a token first (<code>TOKEN=$(curl …)</code>, with <code>$PARTNER_CLIENT_ID</code> and <code>$PARTNER_CLIENT_SECRET</code> from your environment).</p>
${sections}
</body>
</html>
`;
}
