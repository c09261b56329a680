import { categories } from '../check.js';
import { type CheckResult, exitCodeFor, type Report } from '../report.js';

export interface HtmlReportMeta {
  /** The kind of target: `embedded mock (deployed)` or `remote`. */
  kind: string;
  /** The token profile observed. */
  profile: string;
}

export function htmlEscape(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

// Inline styles only: the report is one file that opens offline, with no external asset.
const style = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem;color:#1b1f24}
h1{font-size:1.5rem;margin:0 0 .25rem}h2{font-size:1.1rem;margin:2rem 0 .5rem;border-bottom:1px solid #d0d7de;padding-bottom:.25rem}
table{border-collapse:collapse;width:100%;table-layout:fixed}col.check{width:28%}col.severity{width:7%}col.rule{width:19%}col.result{width:8%}th,td{text-align:left;vertical-align:top;padding:.35rem .5rem;border-bottom:1px solid #eaeef2}
th{background:#f6f8fa;font-weight:600}dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:1rem 0}dt{font-weight:600}dd{margin:0}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace}pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:0;font:12px ui-monospace,SFMono-Regular,Menlo,monospace}
.verdict{display:inline-block;padding:.25rem .75rem;border-radius:4px;font-weight:700;color:#fff}.pass{background:#1a7f37}.fail{background:#cf222e}
.passed{color:#1a7f37}.failed{color:#cf222e}.skipped{color:#9a6700}.errored{color:#8250df}.status{font-weight:700;white-space:nowrap}
`;

function row(check: CheckResult): string {
  return `<tr id="${htmlEscape(check.id)}"><td><code>${htmlEscape(check.id)}</code><br>${htmlEscape(check.title)}</td><td>${check.severity}</td><td>${htmlEscape(check.reference)}</td><td class="status ${check.status}">${check.status}</td><td><pre>${htmlEscape(check.details)}</pre></td></tr>`;
}

/** A self-contained HTML certification report: tool, target, profile, date and every check with its rule. */
export function formatHtmlReport(report: Report, meta: HtmlReportMeta): string {
  const code = exitCodeFor(report.checks);
  const { passed, failed, skipped, errored } = report.summary;
  const known = new Set<string>(categories);
  const order = [
    ...categories,
    ...new Set(report.checks.map((c) => c.category).filter((c) => !known.has(c))),
  ];
  const sections = order
    .map((category) => {
      const checks = report.checks.filter((check) => check.category === category);
      if (checks.length === 0) return '';
      return `<h2>${htmlEscape(category)}</h2>\n<table><colgroup><col class="check"><col class="severity"><col class="rule"><col class="result"><col></colgroup><thead><tr><th>Check</th><th>Severity</th><th>Rule</th><th>Result</th><th>Details</th></tr></thead><tbody>\n${checks.map(row).join('\n')}\n</tbody></table>`;
    })
    .join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Partner Lending conformance report — ${htmlEscape(report.target.baseUrl)}</title>
<style>${style}</style>
</head>
<body>
<h1>Partner Lending conformance report</h1>
<p><span class="verdict ${code === 0 ? 'pass' : 'fail'}">${code === 0 ? 'PASS' : 'FAIL'}</span> ${code === 0 ? 'Every must check passed.' : 'A must check failed or errored.'}</p>
<dl>
<dt>Tool</dt><dd>${htmlEscape(report.tool.name)} ${htmlEscape(report.tool.version)}</dd>
<dt>Target</dt><dd>${htmlEscape(meta.kind)}</dd>
<dt>Auth server</dt><dd><code>${htmlEscape(report.target.authUrl)}</code></dd>
<dt>Partner API</dt><dd><code>${htmlEscape(report.target.baseUrl)}</code></dd>
<dt>Audience</dt><dd><code>${htmlEscape(report.target.audience)}</code></dd>
<dt>Profile</dt><dd>${htmlEscape(meta.profile)}</dd>
<dt>Date</dt><dd>${htmlEscape(report.startedAt)}</dd>
<dt>Duration</dt><dd>${(report.durationMs / 1000).toFixed(2)} s</dd>
<dt>Summary</dt><dd>${report.checks.length} checks: ${passed} passed, ${failed} failed, ${skipped} skipped, ${errored} errored</dd>
</dl>
${sections}
</body>
</html>
`;
}
