export {
  type BearerChallengeResult,
  bearerChallengeOf,
  type Challenge,
  parseChallenges,
} from './bearer-challenge.js';
export { type Category, type Check, type CheckOutcome, categories } from './check.js';
export { checkIds, checks } from './checks/index.js';
export { ConformanceError, type ConformanceErrorCode, exitCodeForError } from './errors.js';
export {
  type CheckResult,
  type CheckStatus,
  type Evidence,
  exitCodeFor,
  mustNotVerified,
  type Report,
  type Severity,
  summarize,
  verdictOf,
} from './report.js';
export { ConsoleReporter, type ConsoleReporterOptions, type ConsoleStream } from './reporters/console.js';
export { formatHtmlReport, type HtmlReportMeta } from './reporters/html.js';
export { formatJsonReport } from './reporters/json.js';
export { formatJunitReport } from './reporters/junit.js';
export {
  type ConformanceOptions,
  type ConformanceRun,
  runConformance,
  runConformanceDetailed,
  type TargetInfo,
} from './run-conformance.js';
