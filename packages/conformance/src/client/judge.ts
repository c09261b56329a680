import { toCheckResult } from '../common/check-meta.js';
import { type Evidence, maxEvidence } from '../common/evidence.js';
import {
  type CheckResult,
  type ClientReport,
  mustNotVerified,
  runEnvironment,
  summarize,
} from '../common/report.js';
import { specSha256 } from '../common/spec-responses.js';
import type { ClientCheck } from './check.js';
import { clientChecks } from './checks/index.js';
import type { ClientSession, RecordedExchange } from './session.js';
import { viewOf } from './view.js';

/** The evidence record of a recorded exchange (already redacted by the stage). */
export function exchangeEvidence(exchange: RecordedExchange, session: ClientSession): Evidence {
  const origin = exchange.server === 'auth' ? session.stage.authUrl : session.stage.baseUrl;
  return {
    method: exchange.method,
    url: `${origin}${exchange.target}`,
    requestHeaders: { ...exchange.requestHeaders },
    ...(exchange.body.text !== undefined && { requestBody: exchange.body.text }),
    status: exchange.status,
    responseHeaders: { ...exchange.responseHeaders },
    responseBody: exchange.responseBody,
    at: exchange.at,
    ...(exchange.injected !== undefined && { note: `scenario: ${exchange.injected}` }),
  };
}

export interface JudgeOptions {
  certify?: boolean;
  /** Check ids to judge (default all). */
  only?: readonly string[];
  /** Monotonic ms clock for durations, default performance.now. */
  now?: () => number;
}

function judgeOne(
  check: ClientCheck,
  session: ClientSession,
  view: ReturnType<typeof viewOf>,
  now: () => number,
): CheckResult {
  const started = now();
  let status: CheckResult['status'];
  let details: string;
  let judged: readonly RecordedExchange[] = [];
  try {
    const outcome = check.judge(view);
    status = outcome.status;
    details = outcome.details;
    judged = [...new Set(outcome.evidence)];
  } catch (error) {
    status = 'errored';
    details = `the check could not complete: ${error instanceof Error ? error.message : String(error)}`;
  }
  // A pass that judged no exchange verified nothing in this run.
  if (status === 'passed' && judged.length === 0) {
    status = 'skipped';
    details = `not verified: the check judged no exchange in this session (${details})`;
  }
  // Exchanges past the recording cap were not seen: a pass could hide a failure among them.
  if (status === 'passed' && session.dropped > 0) {
    status = 'skipped';
    details = `not verified: ${session.dropped} exchanges past the recording cap (${session.maxExchanges}) were not recorded, and a pass cannot speak for them (${details})`;
  }
  const listed = judged.slice(0, maxEvidence);
  return toCheckResult(
    check,
    { status, details },
    {
      listed: listed.map((exchange) => exchangeEvidence(exchange, session)),
      omitted: judged.length - listed.length,
    },
    now() - started,
  );
}

/**
 * Judges a recorded session with the client catalogue: a pure function of the session, so that a saved
 * session judged again gives the same verdicts.
 */
export function judgeSession(session: ClientSession, options: JudgeOptions = {}): ClientReport {
  const now = options.now ?? (() => performance.now());
  const started = now();
  const view = viewOf(session);
  const selected = options.only
    ? clientChecks.filter((check) => options.only!.includes(check.id))
    : clientChecks;
  const checks = selected.map((check) => judgeOne(check, session, view, now));
  const { stage } = session;
  const token = view.tokenRequests.length;
  const api = view.apiCalls.length;
  return {
    schemaVersion: 3,
    tool: { ...session.tool },
    mode: 'client',
    certify: options.certify === true,
    spec: { sha256: specSha256 },
    startedAt: session.startedAt,
    durationMs: Math.round(session.durationMs + (now() - started)),
    environment: runEnvironment(),
    summary: summarize(checks),
    notVerified: mustNotVerified(checks),
    checks,
    stage: {
      authUrl: stage.authUrl,
      baseUrl: stage.baseUrl,
      audience: stage.audience,
      partnerId: stage.partnerId,
      authorizedScopes: [...stage.authorizedScopes],
      ttlSeconds: stage.ttlSeconds,
      longTtlSeconds: stage.longTtlSeconds,
      shortPhaseMs: stage.shortPhaseMs,
      tokenDelayMs: stage.tokenDelayMs,
      apiDelayMs: stage.apiDelayMs,
    },
    journey: { ...session.journey, calls: { token, api, other: session.exchanges.length - token - api } },
    scenarios: session.scenarios.map((item) => ({ ...item })),
    recording: {
      exchanges: session.exchanges.length,
      dropped: session.dropped,
      maxExchanges: session.maxExchanges,
    },
  };
}
