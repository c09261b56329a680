export {
  type CheckResult,
  type CheckStatus,
  exitCodeFor,
  type Report,
  type Severity,
  summarize,
} from './report.js';
