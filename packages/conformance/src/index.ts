export {
  claimedPredicateType,
  type DecisionPredicate,
  type DecisionStatement,
  type DecisionVerification,
  decisionPredicateType,
  verifyDecision,
} from './attestation/decision.js';
export {
  type DsseEnvelope,
  inTotoPayloadType,
  preAuthEncoding,
  signEnvelope,
} from './attestation/dsse.js';
export { type AttestationPublicKey, keysOf, parsePrivateKey, publicJwk } from './attestation/keys.js';
export {
  attestedResult,
  type TestResultPredicate,
  type TestResultStatement,
  testResultStatement,
} from './attestation/statement.js';
export { parseEnvelope, type Verification, verifyAttestation } from './attestation/verify.js';
export {
  type ClientCategory,
  type ClientCheck,
  type ClientOutcome,
  clientCategories,
} from './client/check.js';
export { clientCheckIds, clientChecks } from './client/checks/index.js';
export { type CoverageScenarioId, certificationReasons, coverageOf } from './client/coverage.js';
export { type JudgeOptions, judgeSession } from './client/judge.js';
export {
  type ClientConformanceOptions,
  type ClientConformanceRun,
  runClientConformance,
} from './client/run.js';
export {
  type ClientSession,
  formatSession,
  type IssuedToken,
  type JourneyRecord,
  parseSession,
  type RecordedExchange,
  type ScenarioName,
  type ScenarioRecord,
  type StageInfo,
} from './client/session.js';
export { readSessionFile, type SessionFile } from './client/session-file.js';
export { maxOutsideExchanges } from './client/session-schema.js';
export { assembleSession, stageInfoOf } from './client/stage/assemble.js';
export type { StageServer } from './client/stage/handler.js';
export {
  type CreatedRun,
  type FinishedRun,
  generateStageSigningKey,
  type HostedStage,
  type HostedStageOptions,
  openHostedStage,
  type StageSigningKey,
} from './client/stage/hosted.js';
export type { Injection, LedgerContents, StageLedger } from './client/stage/ledger.js';
export { playScenarios, type ScenarioPlayer, type ScenarioState } from './client/stage/scenarios.js';
export { newStageClient, type StageClient } from './client/stage/stage-client.js';
export {
  defaultApiDelayMs,
  defaultLongTtlSeconds,
  defaultMaxExchanges,
  defaultScopes,
  defaultTokenDelayMs,
  defaultTtlSeconds,
  grantsEveryScope,
  narrowedGrantScopes,
  phasesPlan,
  type RunningStage,
  type StageOptions,
  scenarioNames,
  scenarioPlans,
  startStage,
} from './client/stage.js';
export {
  type BearerChallengeResult,
  bearerChallengeOf,
  type Challenge,
  parseChallenges,
} from './common/bearer-challenge.js';
export {
  type CertificationPlan,
  canonicalJson,
  certificationPlan,
  type DigestedPlan,
  definePlan,
  judgesOfScenario,
  type PlanRef,
  type PlanScenarioId,
  planDigest,
  planRefOf,
  planScenarioIds,
  scenarioJudges,
} from './common/certification-plan.js';
export {
  type AnyReport,
  type CertificationOutcome,
  type CheckResult,
  type CheckStatus,
  type ClientReport,
  type Coverage,
  type CoverageScenario,
  type Evidence,
  exitCodeFor,
  mustNotVerified,
  type PartnerRecord,
  type Report,
  type RunNames,
  reportVerdict,
  type ServiceRecord,
  type Severity,
  summarize,
  verdictOf,
} from './common/report.js';
export {
  ConformanceError,
  type ConformanceErrorCode,
  exitCodeForError,
  UsageError,
} from './errors.js';
export { ConsoleReporter, type ConsoleReporterOptions, type ConsoleStream } from './reporters/console.js';
export { coverageLines } from './reporters/coverage.js';
export { formatClientHtmlReport } from './reporters/html/client.js';
export { contentSecurityPolicy as reportContentSecurityPolicy } from './reporters/html/page.js';
export { formatHtmlReport, type HtmlReportMeta } from './reporters/html/server.js';
export { timelineSvg } from './reporters/html/timeline.js';
export { formatJsonReport } from './reporters/json.js';
export { formatJunitReport } from './reporters/junit.js';
export { type Category, type Check, type CheckOutcome, categories } from './server/check.js';
export { checkIds, checks } from './server/checks/index.js';
export {
  type ConformanceOptions,
  type ConformanceRun,
  runConformance,
  runConformanceDetailed,
  type TargetInfo,
} from './server/run.js';
