import type { ClientReport, CoverageScenario } from '../common/report.js';

/**
 * One scenario, played and handled apart: `played ✓ handled ✓ revocation (client-revocation-recovery
 * passed)`. A report written before scenarios were judged by a check says only met or not.
 */
export function scenarioLine(item: CoverageScenario): string {
  const detail = item.detail ? ` — ${item.detail}` : '';
  if (item.played === undefined || item.outcome === undefined)
    return `scenario  ${item.met ? '✓' : '✗'} ${item.id}: ${item.met ? 'met' : 'not met'}${detail}`;
  const judges = item.checks ?? (item.check ? [item.check] : []);
  const judged =
    judges.length > 0
      ? ` by ${judges.map((check) => `${check.id} (${check.status === 'skipped' ? 'not verified' : check.status})`).join(' and ')}`
      : '';
  const word =
    item.outcome === 'handled'
      ? `handled${judged}`
      : item.outcome === 'not-handled'
        ? `NOT handled${judged}`
        : item.outcome === 'not-verified'
          ? `handling not verified${judged}`
          : 'not played';
  return `scenario  ${item.met ? '✓' : '✗'} ${item.id}: played ${item.played ? 'yes' : 'no'}, ${word}${detail}`;
}

/**
 * The top of every client report, in lines: the plan (or a practice run), each operation with its calls
 * and successes, each scenario played and handled (by the check judging it) or not and why, the must checks not verified, the traffic from
 * outside the run, the names the host gave, and — for a certification run — why it does not certify.
 */
export function coverageLines(report: ClientReport): string[] {
  const { coverage } = report;
  // A report of a service that predates coverage has none to show.
  if (!coverage) return [];
  const lines = [
    report.plan
      ? `plan      ${report.plan.id} (sha256 ${report.plan.digest}) — ${report.certify ? 'certification run' : 'judged without --certify'}`
      : 'plan      none — a practice run (certifies nothing; run with --certify to follow the certification plan)',
  ];
  if (report.partner) lines.push(`partner   ${report.partner.id} ${report.partner.name}`);
  if (report.service) lines.push(`service   ${report.service.url} (version ${report.service.version})`);
  for (const item of coverage.operations)
    lines.push(
      `operation ${item.succeeded > 0 ? '✓' : '✗'} ${item.operationId}: ${item.calls} call${item.calls === 1 ? '' : 's'}, ${item.succeeded} succeeded`,
    );
  for (const item of coverage.scenarios) lines.push(scenarioLine(item));
  lines.push(
    `must not verified: ${coverage.mustNotVerified.length === 0 ? 'none' : coverage.mustNotVerified.join(', ')}`,
  );
  if (report.outsideTraffic)
    lines.push(
      `outside traffic: ${report.outsideTraffic.exchanges} exchange${report.outsideTraffic.exchanges === 1 ? '' : 's'} carried none of the run's credentials or tokens — recorded apart, not judged`,
    );
  if (report.certification)
    lines.push(
      report.certification.passed
        ? 'certification: every operation succeeded, every scenario was played and handled, every must and decisive check passed'
        : `certification: not passed — ${report.certification.reasons.join('; ')}`,
    );
  return lines;
}
