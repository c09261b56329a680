import { createHash } from 'node:crypto';
import { categoryOrder } from '../../common/check-meta.js';
import { type AnyReport, type CheckResult, reportVerdict } from '../../common/report.js';
import { formatJsonReport } from '../json.js';

/** The parts every HTML report shares: escaping, the inline style, the check sections, the verdict. */
export function htmlEscape(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

// Inline styles only: the report is one file that opens offline, with no external asset.
export const style = `
*{box-sizing:border-box}body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem;color:#1b1f24}
h1{font-size:1.5rem;margin:0 0 .25rem}h2{font-size:1.1rem;margin:2rem 0 .5rem;border-bottom:1px solid #d0d7de;padding-bottom:.25rem}
table{border-collapse:collapse;width:100%;table-layout:fixed}col.check{width:28%}col.severity{width:7%}col.rule{width:19%}col.result{width:8%}th,td{text-align:left;vertical-align:top;padding:.35rem .5rem;border-bottom:1px solid #eaeef2}
th{background:#f6f8fa;font-weight:600}dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:1rem 0}dt{font-weight:600}dd{margin:0}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace}pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:0;font:12px ui-monospace,SFMono-Regular,Menlo,monospace}
.verdict{display:inline-block;padding:.25rem .75rem;border-radius:4px;font-weight:700;color:#fff}.pass{background:#1a7f37}.fail{background:#cf222e}
.check{border:1px solid #d0d7de;border-radius:6px;padding:.5rem .75rem;margin:.75rem 0}.check h3{font-size:1rem;margin:.2rem 0}.sev{font-size:.8rem;color:#57606a}blockquote{margin:.3rem 0;padding:.2rem .6rem;border-left:3px solid #d0d7de;color:#3b434b}.muted{color:#57606a}.exchange{background:#f6f8fa;padding:.4rem;margin:.3rem 0}.check.failed,.check.errored{border-color:#cf222e}.check.skipped{border-color:#d4a72c}
.fix{border-left:3px solid #cf222e;padding:.2rem .6rem}svg.timeline{width:100%;height:auto;border:1px solid #d0d7de;border-radius:6px}
.scroll{overflow-x:auto}dd,code{overflow-wrap:anywhere}
@media (max-width:600px){body{margin:1rem auto;padding:0 .6rem}dl{grid-template-columns:1fr}dt{margin-top:.4rem}table{table-layout:auto}col.check,col.severity,col.rule,col.result{width:auto}}
@media print{details::details-content{content-visibility:visible;display:block}details>summary{list-style:none}.check{break-inside:avoid-page}}
.passed{color:#1a7f37}.failed{color:#cf222e}.skipped{color:#9a6700}.errored{color:#8250df}.status{font-weight:700;white-space:nowrap}
`;

/**
 * The report's Content-Security-Policy: nothing may load or run — no script at all, no request to
 * anywhere, no form — and the one inline style is allowed by its hash. A value a hostile session or
 * target slipped past escaping still cannot act.
 */
export const contentSecurityPolicy = `default-src 'none'; style-src '${`sha256-${createHash('sha256').update(style).digest('base64')}`}'; img-src data:; base-uri 'none'; form-action 'none'`;

/** The head of every report: charset, viewport, the CSP, the title (escaped) and the style. */
export function headHtml(title: string): string {
  return `<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${contentSecurityPolicy}">
<meta name="referrer" content="no-referrer">
<title>${htmlEscape(title)}</title>
<style>${style}</style>`;
}

/** A number as the report shows it, escaped: whatever a hostile session put there stays text. */
export const num = (value: unknown, digits?: number): string =>
  htmlEscape(typeof value === 'number' && digits !== undefined ? value.toFixed(digits) : String(value));

const rank = (check: CheckResult): number => {
  if (check.status === 'failed' || check.status === 'errored') return check.severity === 'must' ? 0 : 1;
  if (check.status === 'skipped') return check.severity === 'must' ? 2 : 3;
  return 4;
};

function evidenceHtml(check: CheckResult): string {
  if (check.evidence.length === 0) return '<p class="muted">No exchange recorded.</p>';
  const items = check.evidence.map((item) => {
    const lines = [`${item.method} ${item.url}`];
    for (const [name, value] of Object.entries(item.requestHeaders)) lines.push(`${name}: ${value}`);
    if (item.requestBody !== undefined) lines.push('', item.requestBody);
    if (item.at !== undefined)
      lines.unshift(`at ${(item.at / 1000).toFixed(3)} s${item.note ? ` (${item.note})` : ''}`);
    lines.push('', `→ ${item.status || 'no answer'}`);
    for (const [name, value] of Object.entries(item.responseHeaders)) lines.push(`${name}: ${value}`);
    if (item.responseBody.length > 0) lines.push('', item.responseBody);
    return `<pre class="exchange">${htmlEscape(lines.join('\n'))}</pre>`;
  });
  const more =
    check.evidenceOmitted > 0 ? `<p class="muted">… and ${check.evidenceOmitted} more exchanges.</p>` : '';
  return items.join('\n') + more;
}

function checkHtml(check: CheckResult): string {
  return `<section class="check ${htmlEscape(check.status)}" id="${htmlEscape(check.id)}">
<h3><span class="status ${htmlEscape(check.status)}">${check.status === 'skipped' ? 'not verified' : htmlEscape(check.status)}</span> <code>${htmlEscape(check.id)}</code> — ${htmlEscape(check.title)} <span class="sev">${htmlEscape(check.severity)}</span></h3>
<p class="rule"><strong>Rule</strong> ${htmlEscape(check.reference)}</p>
<blockquote>${htmlEscape(check.citation)}</blockquote>
<p class="pre"><strong>Precondition</strong> ${htmlEscape(check.precondition)}</p>
<pre class="details">${htmlEscape(check.details)}</pre>${check.fix ? `\n<p class="fix"><strong>How to fix</strong> ${htmlEscape(check.fix)}</p>` : ''}
<details><summary>Evidence: ${check.evidence.length + check.evidenceOmitted} exchange${check.evidence.length + check.evidenceOmitted === 1 ? '' : 's'}</summary>
${evidenceHtml(check)}
</details>
</section>`;
}

/** The checks by outcome (failed, not verified, passed), each with its rule, citation, precondition, details and evidence. */
export function sectionsHtml(report: AnyReport): string {
  const catalogue = categoryOrder(report.mode);
  const orderOf = (category: string) => (catalogue.includes(category) ? catalogue.indexOf(category) : 99);
  const sorted = [...report.checks].sort(
    (a, b) => rank(a) - rank(b) || orderOf(a.category) - orderOf(b.category),
  );
  const groups: Array<[string, CheckResult[]]> = [
    ['Failed or errored', sorted.filter((c) => rank(c) <= 1)],
    ['Not verified', sorted.filter((c) => rank(c) === 2 || rank(c) === 3)],
    ['Passed', sorted.filter((c) => rank(c) === 4)],
  ];
  return groups
    .filter(([, checks]) => checks.length > 0)
    .map(([name, checks]) => `<h2>${name} (${checks.length})</h2>\n${checks.map(checkHtml).join('\n')}`)
    .join('\n');
}

/** The lines every report shows about itself: its JSON twin's digest and where it was made. */
export function provenanceHtml(report: AnyReport): string {
  const digest = createHash('sha256').update(formatJsonReport(report)).digest('hex');
  const env = report.environment;
  return `<dt>JSON twin SHA-256</dt><dd><code>${digest}</code> (of the JSON report of this run, as --report-json writes it)</dd>${
    env
      ? `\n<dt>Run on</dt><dd>${htmlEscape(env.host)} — Node ${htmlEscape(env.node)}, ${htmlEscape(env.os)}</dd>`
      : ''
  }`;
}

export function verdictHtml(report: AnyReport): string {
  const verdict = reportVerdict(report);
  return `<p><span class="verdict ${verdict.code === 0 ? 'pass' : 'fail'}">${verdict.word}</span> ${htmlEscape(verdict.text.replace(/^(PASS|FAIL) — /, ''))}${report.certify ? ' (certification mode)' : ''}</p>`;
}
