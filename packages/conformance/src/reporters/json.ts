import {
  type AnyReport,
  attestationOf,
  type CheckResult,
  type ClientReport,
  type Report,
} from '../common/report.js';

const serverKeys = [
  'schemaVersion',
  'tool',
  'mode',
  'certify',
  'target',
  'spec',
  'writes',
  'startedAt',
  'durationMs',
  'environment',
  'summary',
  'notVerified',
  'stopped',
  'checks',
] as const satisfies readonly (keyof Report)[];

const clientKeys = [
  'schemaVersion',
  'tool',
  'mode',
  'certify',
  'partner',
  'integration',
  'plan',
  'service',
  'certification',
  'coverage',
  'outsideTraffic',
  'stage',
  'journey',
  'scenarios',
  'recording',
  'provenance',
  'operations',
  'run',
  'spec',
  'startedAt',
  'durationMs',
  'environment',
  'summary',
  'notVerified',
  'checks',
] as const satisfies readonly (keyof ClientReport)[];

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
  'fix',
  'evidence',
  'evidenceOmitted',
  'durationMs',
] as const satisfies readonly (keyof CheckResult)[];

const pick = <T extends object>(value: T, keys: readonly (keyof T)[]) =>
  Object.fromEntries(keys.map((key) => [key, value[key]]));

/** The JSON report (schemaVersion 3, either mode), pretty-printed, its keys in the documented order. */
export function formatJsonReport(report: AnyReport): string {
  const ordered = {
    ...(report.mode === 'client'
      ? // provenance.attested is always there: false unless a signature vouches (an older service's report included).
        {
          ...pick(report, clientKeys),
          provenance: { ...report.provenance, ...attestationOf(report.provenance) },
        }
      : pick(report, serverKeys)),
    checks: report.checks.map((check) => pick(check, checkKeys)),
  };
  return `${JSON.stringify(ordered, null, 2)}\n`;
}
