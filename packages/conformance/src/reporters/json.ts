import type { Report } from '../report.js';

/** The JSON report of the contract (DESIGN.md), pretty-printed. */
export function formatJsonReport(report: Report): string {
  return `${JSON.stringify(report, null, 2)}\n`;
}
