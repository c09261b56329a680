import { hostname, release as osRelease, type as osType } from 'node:os';
import type { Evidence } from './evidence.js';
import type { JourneyRecord, ScenarioRecord } from './records.js';

/** The JSON report of `partner-conformance`, versioned by `schemaVersion`. */
export type Severity = 'must' | 'should';
export type CheckStatus = 'passed' | 'failed' | 'skipped' | 'errored';

export type { Evidence } from './evidence.js';

export interface CheckResult {
  id: string;
  title: string;
  category: string;
  severity: Severity;
  status: CheckStatus;
  /** The rule the check enforces, e.g. "RFC 6750 §3.1" or "API documentation §4.1 rule 2". */
  reference: string;
  /** The cited sentence whose normative word sets the severity (schemaVersion 2). */
  citation: string;
  /** What must hold before a pass counts; a skipped check's details say which part did not (schemaVersion 2). */
  precondition: string;
  /** What was expected and what came back; never a secret or a whole token. */
  details: string;
  /** Client mode: one line for the partner's developer on how to fix a failure (schemaVersion 3). */
  fix?: string;
  /** The exchanges the check judged, redacted, in order (schemaVersion 2). */
  evidence: Evidence[];
  /** Exchanges judged beyond the ones listed in `evidence`. */
  evidenceOmitted: number;
  durationMs: number;
}

interface ReportBase {
  schemaVersion: 3;
  tool: { name: string; version: string };
  /** `server`: a token endpoint and API were checked; `client`: a partner's integration was (schemaVersion 3). */
  mode: 'server' | 'client';
  /** `--certify`: a skipped `must` check fails the run (schemaVersion 3; was `mode: 'certify'`). */
  certify: boolean;
  /** The bundled spec the run judged against: its SHA-256 (hex). */
  spec: { sha256: string };
  startedAt: string;
  durationMs: number;
  /** Where the run happened: Node version, OS, host (schemaVersion 3). */
  environment?: RunEnvironment;
  summary: Record<'passed' | 'failed' | 'skipped' | 'errored', number>;
  /** Ids of the `must` checks that were skipped: rules this run did not verify. */
  notVerified: string[];
  checks: CheckResult[];
}

/** The vendor's partner, as the host of a run (the certification service) names it. */
export interface PartnerRecord {
  id: string;
  name: string;
}

/** The service that hosted a run: its public URL and version. */
export interface ServiceRecord {
  url: string;
  version: string;
}

/** The names a host passes in: kept in the session, the report and the attestation. */
export interface RunNames {
  partner?: PartnerRecord;
  plan?: { id: string; digest: string };
  service?: ServiceRecord;
}

/** What a certification run exercised, against its plan. */
export interface Coverage {
  /** Each operation of the API (the spec's four, in spec order): calls, and answers 2xx. */
  operations: { operationId: string; calls: number; succeeded: number }[];
  /** Each scenario of the run's plan: played, and handled (judged by its check), and why. */
  scenarios: CoverageScenario[];
  /** `must` checks that were not verified (skipped). */
  mustNotVerified: string[];
}

/**
 * One scenario of a run's plan: whether the stage played it on the journey's traffic, and whether the
 * client handled it — the check the plan names for it passed. `outcome`: `handled`; `not-handled` (the
 * check failed or errored); `not-verified` (played, but the client had no chance to show the behaviour:
 * the check was not verified, or the scenario's own step had nothing after it to judge); `not-played`.
 */
export interface CoverageScenario {
  id: string;
  /** Handled: played, and judged handled by its check (the only way a scenario is met). */
  met: boolean;
  /** The stage played it on the journey's traffic (a token revoked, a 429 sent, a grant narrowed, a renewal). */
  played?: boolean;
  outcome?: 'handled' | 'not-handled' | 'not-verified' | 'not-played';
  /**
   * The check that decided its outcome — the first of its judges that failed, else the first not
   * verified, else the first — with its status in this report.
   */
  check?: { id: string; status: CheckStatus | 'not-judged' };
  /** Every check that judges it (the plan's `handledBy`), each with its status: handled when all passed. */
  checks?: { id: string; status: CheckStatus | 'not-judged' }[];
  /** What was played (or why not), then how the check judged it. */
  detail?: string;
}

/** A certification run's decision and, when it did not pass, why (stable strings, see `certificationReasons`). */
export interface CertificationOutcome {
  passed: boolean;
  reasons: string[];
}

/** The partner's integration as the report names it. */
export interface IntegrationRecord {
  name?: string;
  version?: string;
}

/** Who ran the suite where: what a reviewer needs to place a report. */
export interface RunEnvironment {
  node: string;
  os: string;
  host: string;
}

/** The environment of this process. */
export function runEnvironment(): RunEnvironment {
  return {
    node: process.version,
    os: `${osType()} ${osRelease()} ${process.arch}`,
    host: hostname(),
  };
}

/** A certification stage as a client report names it: its addresses, its client's scopes, its timings. */
export interface StageRecord {
  authUrl: string;
  baseUrl: string;
  audience: string;
  partnerId: string;
  /** The scopes the stage's client is authorised for. */
  authorizedScopes: string[];
  /** Lifetime of the short phase's tokens (JWT `exp` − `iat`), in seconds (`--ttl`). */
  ttlSeconds: number;
  /** Lifetime of the tokens issued after the short phase, in seconds (`--long-ttl`). */
  longTtlSeconds: number;
  /** How long the short phase lasts from the start, in ms (3 × ttlSeconds). */
  shortPhaseMs: number;
  /** Delay the token endpoint adds to every answer, in ms (so that concurrent requests overlap visibly). */
  tokenDelayMs: number;
  /** Delay before every API answer, in ms (so that concurrent calls overlap visibly). */
  apiDelayMs: number;
}

/** The JSON report of a server run (`partner-conformance`). */
export interface Report extends ReportBase {
  mode: 'server';
  target: { authUrl: string; baseUrl: string; audience: string };
  /** Whether create endpoints got requests with a body, and what those may have created. */
  writes: { allowed: boolean; mayHaveCreated: string[] };
  /** Set when the run stopped before any check (the preflight): its error code and why; `checks` is empty. */
  stopped?: { code: string; reason: string };
}

/** The JSON report of a client run (`partner-conformance client`): the partner's integration judged. */
export interface ClientReport extends ReportBase {
  mode: 'client';
  /** The certification stage the journey ran against (no credential). */
  stage: StageRecord;
  /** The journey that was run: the command (redacted), how it ended, how many calls it made. */
  journey: JourneyRecord & { calls: { token: number; api: number; other: number } };
  /** The scenario plan, each step with when it fired (absent: the journey never reached it). */
  scenarios: ScenarioRecord[];
  /** Exchanges recorded and dropped past the cap (a dropped exchange makes every pass "not verified"). */
  /** `clamped`: recorded values the stage shortened to the session's bounds (each marked "…[N chars]"). */
  recording: { exchanges: number; dropped: number; maxExchanges: number; clamped?: number };
  /** The integration certified: the partner's name and its version or commit, as given (or `git describe`). */
  integration?: IntegrationRecord;
  /** Where the verdicts come from, and what they prove. */
  provenance: Provenance;
  /** Each operation of the API: how the journey exercised it (a pass says nothing of one never called). */
  operations: OperationRecord[];
  /** A run of the certification service: its id and its address in the service's API. */
  run?: { id: string; url: string };
  /** Operations, scenarios and must checks not verified: what the run covered (top of every report). */
  coverage: Coverage;
  /** With --certify: whether the run certifies under its plan and, if not, why. */
  certification?: CertificationOutcome;
  /** Exchanges that carried none of the run's credentials or tokens: recorded apart, never judged. */
  outsideTraffic?: { exchanges: number };
  partner?: PartnerRecord;
  plan?: { id: string; digest: string };
  service?: ServiceRecord;
}

/** How a client report came to be. */
export interface Provenance {
  /**
   * `live`: judged as the stage recorded it, on this machine; `rejudged`: judged again from a session
   * file; `service`: recorded and judged by the certification service, which signs it.
   */
  source: 'live' | 'rejudged' | 'service';
  /** SHA-256 of the session's bytes as saved (--save-session) or read (--judge). */
  sessionSha256: string;
  /** The file judged (rejudged only). */
  sessionFile?: string;
  /**
   * Whether a verified signature vouches for the session: true for a run the certification service
   * recorded, judged and signed (or a report whose attestation was verified); false for a session a
   * stage recorded on the partner's side — live on this machine, or judged again from a file.
   */
  attested: boolean;
  /** The mark every report format shows: "self-recorded, not attested" for a session judged from a file. */
  mark: string;
  /** What this kind of report proves, in a sentence for the reviewer. */
  note: string;
}

/**
 * A report's attestation flag and mark as the reporters show them: a report from an older service
 * without them is not attested (only `attested: true` is).
 */
export function attestationOf(provenance: Provenance): { attested: boolean; mark: string } {
  const attested = provenance.attested === true;
  return {
    attested,
    mark: typeof provenance.mark === 'string' ? provenance.mark : provenanceMark({ ...provenance, attested }),
  };
}

/** The mark of a report's provenance, the same words in every format (console, JSON, JUnit, HTML). */
export function provenanceMark(provenance: Pick<Provenance, 'source' | 'attested'>): string {
  if (provenance.attested)
    return provenance.source === 'service'
      ? 'attested: recorded, judged and signed by the certification service'
      : 'attested: its signature was verified';
  if (provenance.source === 'rejudged') return 'self-recorded, not attested';
  if (provenance.source === 'live') return 'recorded by the local stage, not attested';
  return 'recorded by the certification service, not attested';
}

/** How one operation was exercised by the journey. */
export interface OperationRecord {
  operationId: string;
  method: string;
  path: string;
  scope: string;
  calls: number;
  /** Answers 2xx. */
  successes: number;
  /** Answers other than 2xx, by status (0: no answer). */
  refusals: Record<string, number>;
  /** At least one call of it succeeded: the integration was certified on it. */
  exercised: boolean;
}

export type AnyReport = Report | ClientReport;

/** Counts the checks by status. */
export function summarize(checks: readonly CheckResult[]): Report['summary'] {
  const summary = { passed: 0, failed: 0, skipped: 0, errored: 0 };
  for (const check of checks) summary[check.status] += 1;
  return summary;
}

/** The `must` checks that did not run to a verdict (skipped). */
export function mustNotVerified(
  checks: readonly Pick<CheckResult, 'id' | 'severity' | 'status'>[],
): string[] {
  return checks.filter((c) => c.severity === 'must' && c.status === 'skipped').map((c) => c.id);
}

/** Why a client run's journey did not complete (exit 0 on its own), or undefined. */
export function journeyFailureOf(report: AnyReport): string | undefined {
  if (report.mode !== 'client') return undefined;
  const { journey } = report;
  // Recording without a command ends with Ctrl-C or --duration: that is how it is meant to end.
  if (journey.command.length === 0) return undefined;
  if (journey.ending === 'exited' && journey.exitCode === 0) return undefined;
  if (journey.ending === 'exited')
    return `the journey exited with ${journey.exitCode ?? `signal ${journey.signal}`}`;
  return journey.note ?? `the journey ended: ${journey.ending}`;
}

/** The verdict of any report, as every reporter prints it. */
export function reportVerdict(report: AnyReport): ReturnType<typeof verdictOf> {
  if (report.mode === 'server' && report.stopped)
    return {
      code: 1,
      word: 'FAIL',
      text: `FAIL — the run stopped before any check: ${report.stopped.reason}`,
    };
  const journeyFailure = journeyFailureOf(report);
  if (
    report.mode === 'client' &&
    report.certification &&
    !report.certification.passed &&
    journeyFailure === undefined
  )
    return {
      code: 1,
      word: 'FAIL',
      text: `FAIL — not certified under plan ${report.plan?.id ?? 'of this run'}: ${report.certification.reasons.join('; ')}`,
    };
  return verdictOf(report.checks, {
    certify: report.certify,
    ...(journeyFailure !== undefined && { journeyFailure }),
  });
}

/**
 * The exit code of the contract: 1 when a `must` check failed or errored (or, with `certify`, was
 * skipped), else 0.
 */
export function exitCodeFor(
  checks: readonly Pick<CheckResult, 'id' | 'severity' | 'status'>[],
  options: { certify?: boolean } = {},
): 0 | 1 {
  const bad = checks.some((c) => c.severity === 'must' && (c.status === 'failed' || c.status === 'errored'));
  if (bad) return 1;
  return options.certify && mustNotVerified(checks).length > 0 ? 1 : 0;
}

/** The one-line verdict every reporter prints. */
export function verdictOf(
  checks: readonly Pick<CheckResult, 'id' | 'severity' | 'status'>[],
  options: { certify?: boolean; journeyFailure?: string } = {},
): { code: 0 | 1; word: 'PASS' | 'FAIL'; text: string } {
  if (options.certify && options.journeyFailure !== undefined)
    return {
      code: 1,
      word: 'FAIL',
      text: `FAIL — certification needs a journey that completes: ${options.journeyFailure}`,
    };
  const code = exitCodeFor(checks, options);
  const failedMust = checks.filter(
    (c) => c.severity === 'must' && (c.status === 'failed' || c.status === 'errored'),
  );
  const skippedMust = mustNotVerified(checks);
  const notVerified = `${skippedMust.length} must check${skippedMust.length === 1 ? '' : 's'} not verified: ${skippedMust.join(', ')}`;
  if (failedMust.length > 0)
    return {
      code,
      word: 'FAIL',
      text: `FAIL — ${failedMust.length} must check${failedMust.length === 1 ? '' : 's'} failed or errored: ${failedMust.map((c) => c.id).join(', ')}${skippedMust.length > 0 ? `; ${notVerified}` : ''}`,
    };
  if (skippedMust.length > 0)
    return options.certify
      ? { code, word: 'FAIL', text: `FAIL — certification needs every must check verified; ${notVerified}` }
      : { code, word: 'PASS', text: `PASS — ${notVerified}` };
  return { code, word: 'PASS', text: 'PASS — every must check passed' };
}

/**
 * What a client report means for approval, in three lines: the must outcome, the should failures (which
 * do not block approval), and the operations the integration was certified on — a pass says nothing of
 * an operation the journey never exercised successfully.
 */
export function decisionLines(report: ClientReport): string[] {
  const must = report.checks.filter((check) => check.severity === 'must');
  const mustBad = must.filter((check) => check.status === 'failed' || check.status === 'errored');
  const mustSkipped = must.filter((check) => check.status === 'skipped');
  const shouldBad = report.checks.filter((check) => check.severity === 'should' && check.status === 'failed');
  const lines = [
    mustBad.length > 0
      ? `must checks: ${mustBad.length} of ${must.length} failed (${mustBad.map((c) => c.id).join(', ')}) — the integration cannot be approved until they pass`
      : mustSkipped.length > 0
        ? `must checks: ${must.length - mustSkipped.length} of ${must.length} passed, ${mustSkipped.length} not verified (${mustSkipped.map((c) => c.id).join(', ')}) — certification (--certify) needs them verified`
        : `must checks: all ${must.length} passed — the rules an approval requires hold for what the journey did`,
    shouldBad.length > 0
      ? report.certification
        ? `should checks: ${shouldBad.length} failed (${shouldBad.map((c) => c.id).join(', ')}) — recommendations, except those the certification plan makes decisive (the certification line says which block it)`
        : `should checks: ${shouldBad.length} failed (${shouldBad.map((c) => c.id).join(', ')}) — recommendations: they do not block approval, and a reviewer may ask for them`
      : 'should checks: none failed',
  ];
  const exercised = report.operations.filter((operation) => operation.exercised);
  const missed = report.operations.filter((operation) => !operation.exercised);
  const refusals = (operation: OperationRecord) =>
    Object.entries(operation.refusals)
      .map(([status, count]) => `${count} × ${status === '0' ? 'no answer' : status}`)
      .join(', ');
  lines.push(
    `operations certified on (exercised successfully): ${exercised.map((o) => `${o.operationId} (${o.successes} of ${o.calls} calls ok)`).join(', ') || 'none'}${
      missed.length > 0
        ? `; not exercised successfully: ${missed.map((o) => `${o.operationId} (${o.calls === 0 ? 'never called' : `${o.calls} call${o.calls === 1 ? '' : 's'}: ${refusals(o)}`})`).join(', ')} — the report certifies nothing about ${missed.length === 1 ? 'it' : 'them'}`
        : ''
    }`,
  );
  return lines;
}
