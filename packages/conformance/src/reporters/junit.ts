import { categoryOrder } from '../common/check-meta.js';
import { type AnyReport, attestationOf, type CheckResult } from '../common/report.js';

/** Escapes text for XML content and attributes, dropping characters XML 1.0 cannot hold. */
export function xmlEscape(text: string): string {
  // XML 1.0 §2.2 Char: tab, LF, CR and U+0020 upward (lone surrogates and U+FFFE/FFFF excluded).
  return [...text]
    .filter((char) => {
      const code = char.codePointAt(0)!;
      return (
        code === 9 ||
        code === 10 ||
        code === 13 ||
        (code >= 0x20 && code !== 0xfffe && code !== 0xffff && (code < 0xd800 || code > 0xdfff))
      );
    })
    .join('')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

const seconds = (ms: number) => (ms / 1000).toFixed(3);

function testcase(check: CheckResult): string {
  const attrs = `classname="partner-conformance.${xmlEscape(check.category)}" name="${xmlEscape(check.id)}" time="${seconds(check.durationMs)}"`;
  const properties =
    `      <properties>\n` +
    `        <property name="title" value="${xmlEscape(check.title)}"/>\n` +
    `        <property name="severity" value="${check.severity}"/>\n` +
    `        <property name="reference" value="${xmlEscape(check.reference)}"/>\n` +
    `      </properties>\n`;
  const message = xmlEscape(`${check.title} [${check.severity}, ${check.reference}]`);
  let outcome = '';
  if (check.status === 'failed')
    outcome = `      <failure message="${message}" type="${check.severity}">${xmlEscape(check.fix ? `${check.details}\nhow to fix: ${check.fix}` : check.details)}</failure>\n`;
  else if (check.status === 'errored')
    outcome = `      <error message="${message}" type="errored">${xmlEscape(check.details)}</error>\n`;
  else if (check.status === 'skipped') outcome = `      <skipped message="${xmlEscape(check.details)}"/>\n`;
  else outcome = `      <system-out>${xmlEscape(check.details)}</system-out>\n`;
  return `    <testcase ${attrs}>\n${properties}${outcome}    </testcase>\n`;
}

/** JUnit XML: one testsuite per category, one testcase per check. */
export function formatJunitReport(report: AnyReport): string {
  const count = (checks: readonly CheckResult[], status: CheckResult['status']) =>
    checks.filter((check) => check.status === status).length;
  const totals = (checks: readonly CheckResult[]) =>
    `tests="${checks.length}" failures="${count(checks, 'failed')}" errors="${count(checks, 'errored')}" skipped="${count(checks, 'skipped')}" time="${seconds(checks.reduce((sum, check) => sum + check.durationMs, 0))}"`;
  const catalogue = categoryOrder(report.mode);
  const known = new Set<string>(catalogue);
  const order = [...catalogue, ...new Set(report.checks.map((c) => c.category).filter((c) => !known.has(c)))];
  let out = `<?xml version="1.0" encoding="UTF-8"?>\n`;
  out += `<testsuites name="${xmlEscape(report.tool.name)}" ${totals(report.checks).replace(/time="[^"]*"/, `time="${seconds(report.durationMs)}"`)} timestamp="${xmlEscape(report.startedAt)}">\n`;
  let suiteProperties = '';
  if (report.mode === 'client') {
    // Where the verdicts come from, for a CI that reads only JUnit: the session's digest and provenance.
    const properties: Array<[string, string]> = [
      ['session-sha256', report.provenance.sessionSha256],
      ['provenance', report.provenance.source],
      ['attested', String(attestationOf(report.provenance).attested)],
      ['provenance-mark', attestationOf(report.provenance).mark],
      ...(report.integration?.name
        ? ([['integration', report.integration.name]] as Array<[string, string]>)
        : []),
      ...(report.integration?.version
        ? ([['integration-version', report.integration.version]] as Array<[string, string]>)
        : []),
    ];
    // The coverage a certification decides on, for a CI that reads only JUnit.
    if (report.coverage)
      properties.push(
        ['plan', report.plan ? `${report.plan.id} sha256:${report.plan.digest}` : 'none (practice run)'],
        ...report.coverage.operations.map((item): [string, string] => [
          `operation:${item.operationId}`,
          `${item.calls} calls, ${item.succeeded} succeeded`,
        ]),
        ...report.coverage.scenarios.map((item): [string, string] => [
          `scenario:${item.id}`,
          // "met" / "not met" first, as before scenarios were judged; then played and handled apart.
          item.met
            ? item.checks
              ? `met: played, handled (${item.checks.map((check) => `${check.id} passed`).join(', ')})`
              : 'met'
            : `not met: ${item.outcome ? `${item.outcome}${item.check ? ` (${item.check.id} ${item.check.status})` : ''} — ` : ''}${item.detail ?? ''}`,
        ]),
        ['must-not-verified', report.coverage.mustNotVerified.join(',') || 'none'],
        ...(report.partner
          ? ([['partner', `${report.partner.id} ${report.partner.name}`]] as Array<[string, string]>)
          : []),
        ...(report.outsideTraffic
          ? ([['outside-traffic', `${report.outsideTraffic.exchanges} exchanges, not judged`]] as Array<
              [string, string]
            >)
          : []),
        ...(report.certification
          ? ([
              [
                'certification',
                report.certification.passed
                  ? 'passed'
                  : `not passed: ${report.certification.reasons.join('; ')}`,
              ],
            ] as Array<[string, string]>)
          : []),
      );
    suiteProperties = `    <properties>\n${properties.map(([name, value]) => `      <property name="${name}" value="${xmlEscape(value)}"/>\n`).join('')}    </properties>\n`;
  }
  for (const category of order) {
    const checks = report.checks.filter((check) => check.category === category);
    if (checks.length === 0) continue;
    out += `  <testsuite name="${xmlEscape(category)}" ${totals(checks)} timestamp="${xmlEscape(report.startedAt)}">\n`;
    out += suiteProperties;
    out += checks.map(testcase).join('');
    out += `  </testsuite>\n`;
  }
  if (report.mode === 'server' && report.stopped) {
    // No check ran: one errored case says why, so that a CI reading only JUnit does not see "0 tests, green".
    out = out.replace(/tests="0" failures="0" errors="0"/, 'tests="1" failures="0" errors="1"');
    out += `  <testsuite name="preflight" tests="1" failures="0" errors="1" skipped="0" time="0.000" timestamp="${xmlEscape(report.startedAt)}">\n`;
    out += `    <testcase classname="partner-conformance.preflight" name="run-stopped" time="0.000">\n      <error message="${xmlEscape(report.stopped.code)}" type="errored">${xmlEscape(report.stopped.reason)}</error>\n    </testcase>\n  </testsuite>\n`;
  }
  return `${out}</testsuites>\n`;
}
