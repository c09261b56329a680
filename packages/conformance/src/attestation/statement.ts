import { createHash } from 'node:crypto';
import { clientCheckIds } from '../client/checks/index.js';
import {
  type ClientReport,
  type IntegrationRecord,
  type PartnerRecord,
  reportVerdict,
  type ServiceRecord,
} from '../common/report.js';
import { formatJsonReport } from '../reporters/json.js';
import { tool } from '../version.js';

export const statementType = 'https://in-toto.io/Statement/v1';
export const testResultPredicateType = 'https://in-toto.io/attestation/test-result/v0.1';

/** An in-toto ResourceDescriptor (the parts an attestation uses). */
export interface ResourceDescriptor {
  name: string;
  uri?: string;
  digest?: Record<string, string>;
  annotations?: Record<string, unknown>;
}

/** The test-result predicate (in-toto attestation v0.1) of a judged client run. */
export interface TestResultPredicate {
  result: 'PASSED' | 'WARNED' | 'FAILED';
  configuration: ResourceDescriptor[];
  url?: string;
  passedTests: string[];
  warnedTests: string[];
  failedTests: string[];
  /** Whose run this is, as the host named it (the vendor's partner id and name). */
  partner?: PartnerRecord;
  integration?: IntegrationRecord;
  /** The certification plan the run followed. */
  plan?: { id: string; digest: string };
  /** The service that hosted, judged and signed the run. */
  service?: ServiceRecord;
}

/** An in-toto Statement v1 whose subject is a session and whose predicate is its verdicts. */
export interface TestResultStatement {
  _type: typeof statementType;
  subject: ResourceDescriptor[];
  predicateType: typeof testResultPredicateType;
  predicate: TestResultPredicate;
}

const sha256 = (text: string | Buffer) => createHash('sha256').update(text).digest('hex');

/**
 * The verdict lists of a report, as an attestation states them: a failed or errored `must` check (and,
 * under --certify, a must check not verified, or a journey that did not complete) fails; a failed
 * `should` check warns; a passed check passes. Derived from the report alone, so `verify` derives them
 * again from the session.
 */
export function attestedResult(
  report: ClientReport,
): Pick<TestResultPredicate, 'result' | 'passedTests' | 'warnedTests' | 'failedTests'> {
  const failedTests = report.checks
    .filter(
      (check) =>
        check.severity === 'must' &&
        (check.status === 'failed' ||
          check.status === 'errored' ||
          (report.certify && check.status === 'skipped')),
    )
    .map((check) => check.id);
  const warnedTests = report.checks
    .filter(
      (check) => check.severity === 'should' && (check.status === 'failed' || check.status === 'errored'),
    )
    .map((check) => check.id);
  const passedTests = report.checks.filter((check) => check.status === 'passed').map((check) => check.id);
  const failed = reportVerdict(report).code !== 0;
  return {
    result: failed ? 'FAILED' : warnedTests.length > 0 ? 'WARNED' : 'PASSED',
    passedTests,
    warnedTests,
    failedTests,
  };
}

/** The check catalogue a verdict was reached with: the tool's version and the digest of the check ids. */
export const catalogueDescriptor = (): ResourceDescriptor => ({
  name: 'check-catalogue',
  digest: { sha256: sha256(clientCheckIds.join('\n')) },
  annotations: { tool: tool.name, version: tool.version, checks: clientCheckIds.length },
});

/**
 * The statement of a judged session: its subject is the SHA-256 of the exact session bytes served;
 * the predicate holds the result, the check catalogue, the scenario plan, how it was judged
 * (--certify) and the report's digest.
 */
export function testResultStatement(options: {
  sessionBytes: Buffer | string;
  report: ClientReport;
  sessionName?: string;
  url?: string;
}): TestResultStatement {
  const { report } = options;
  return {
    _type: statementType,
    subject: [
      { name: options.sessionName ?? 'session.json', digest: { sha256: sha256(options.sessionBytes) } },
    ],
    predicateType: testResultPredicateType,
    predicate: {
      ...attestedResult(report),
      configuration: [
        catalogueDescriptor(),
        {
          name: 'scenario-plan',
          annotations: {
            scenarios: report.scenarios.map((scenario) => ({
              name: scenario.name,
              enabled: scenario.enabled,
            })),
            ttlSeconds: report.stage.ttlSeconds,
            longTtlSeconds: report.stage.longTtlSeconds,
            shortPhaseMs: report.stage.shortPhaseMs,
          },
        },
        {
          name: 'judge-options',
          annotations: { certify: report.certify, checks: report.checks.map((check) => check.id) },
        },
        { name: 'report.json', digest: { sha256: sha256(formatJsonReport(report)) } },
      ],
      ...(options.url !== undefined && { url: options.url }),
      ...(report.partner && { partner: { id: report.partner.id, name: report.partner.name } }),
      ...(report.integration && { integration: { ...report.integration } }),
      ...(report.plan && { plan: { id: report.plan.id, digest: report.plan.digest } }),
      ...(report.service && { service: { url: report.service.url, version: report.service.version } }),
    },
  };
}
