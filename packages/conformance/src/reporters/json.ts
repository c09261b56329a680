import type { CheckResult, Report } from '../report.js';

const reportKeys = [
  'schemaVersion',
  'tool',
  'target',
  'spec',
  'mode',
  'writes',
  'startedAt',
  'durationMs',
  'summary',
  'notVerified',
  'checks',
] as const satisfies readonly (keyof Report)[];

const checkKeys = [
  'id',
  'title',
  'category',
  'severity',
  'status',
  'reference',
  'citation',
  'precondition',
  'details',
  'evidence',
  'evidenceOmitted',
  'durationMs',
] as const satisfies readonly (keyof CheckResult)[];

const pick = <T extends object>(value: T, keys: readonly (keyof T)[]) =>
  Object.fromEntries(keys.map((key) => [key, value[key]]));

/** The JSON report (schemaVersion 2), pretty-printed, its keys in the documented order. */
export function formatJsonReport(report: Report): string {
  const ordered = {
    ...pick(report, reportKeys),
    checks: report.checks.map((check) => pick(check, checkKeys)),
  };
  return `${JSON.stringify(ordered, null, 2)}\n`;
}
