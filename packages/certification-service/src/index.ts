export { addPartner, addReviewer } from './admin.js';
export { type Database, openDatabase, openEmbedded, openPostgres, type Queryable } from './db/database.js';
export { migrate, migrations } from './db/migrations.js';
export {
  InternalError,
  ServiceError,
  type ServiceErrorCode,
  StorageUnavailableError,
  UsageError,
} from './errors.js';
export {
  addEvidenceReporter,
  claimExchanges,
  defaultEvidenceLimits,
  defaultEvidenceRetentionDays,
  EvidenceLeaseLost,
  type EvidenceLimits,
  type EvidenceOptions,
  type Exchange,
  type PartnerEvidence,
  purgeEvidence,
} from './evidence/index.js';
export { OtlpRequestError } from './evidence/otlp.js';
export { defaultFairnessLimits, type FairnessLimits } from './http/fairness.js';
export { defaultJudgingOptions, type JudgingOptions, JudgingUnavailableError } from './judging/pool.js';
export { jwksOf, loadSigningKey, publishKey, type SigningKey } from './keys.js';
export { createLogger, type Logger } from './observability/logger.js';
export { type MetricsServer, registry as metricsRegistry, serveMetrics } from './observability/metrics.js';
export { startTracing, type Tracing } from './observability/tracing.js';
export { type OidcAllowRule, type OidcOptions, oidcCallbackPath, parseAllowRule } from './oidc/oidc.js';
export { type DigestedPlan, defaultPlan, loadPlanFile, makePlan, type PlanFile } from './plan/plan.js';
export { approvability, type Coverage, coverageOf } from './production/approvability.js';
export {
  type DecisionInput,
  DecisionRefusal,
  type DecisionRow,
  listDecisions,
  recordDecision,
} from './production/decisions/decisions.js';
export { ChangeRefusal } from './production/register/changes.js';
export { RunClosedError } from './recording/run-closed.js';
export { type PurgeResult, purgeExpired } from './retention/retention.js';
export { defaultRunLimits, type RunLimits, RunRefusal, type RunRequest } from './runs/runs.js';
export { type RunningService, type ServiceOptions, startService } from './server.js';
export { defaultSigninLimits, type SigninLimits } from './signin/signin-guard.js';
