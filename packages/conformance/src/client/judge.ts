import { createHash } from 'node:crypto';
import { type ApiOperationId, operations } from '@partner-lending/spec';
import { type DigestedPlan, planDigest } from '../common/certification-plan.js';
import { toCheckResult } from '../common/check-meta.js';
import { type Evidence, maxEvidence } from '../common/evidence.js';
import {
  type CheckResult,
  type ClientReport,
  mustNotVerified,
  type OperationRecord,
  type Provenance,
  provenanceMark,
  runEnvironment,
  summarize,
} from '../common/report.js';
import { specSha256 } from '../common/spec-responses.js';

const apiOperationIds = (Object.keys(operations) as Array<keyof typeof operations>).filter(
  (id): id is ApiOperationId => operations[id].server === 'api',
);

import type { ClientCheck } from './check.js';
import { clientChecks } from './checks/index.js';
import { certificationReasons, coverageOf } from './coverage.js';
import { type ClientSession, formatSession, type RecordedExchange } from './session.js';
import { type SessionView, viewOf } from './view.js';

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
  /** A skipped `must` check fails; with a plan (the session's, else `plan`) the plan decides too. */
  certify?: boolean;
  /** The plan to certify against when the session names none (`--judge --certify`: `certificationPlan`). */
  plan?: DigestedPlan;
  /** Check ids to judge (default all). */
  only?: readonly string[];
  /** Monotonic ms clock for durations, default performance.now. */
  now?: () => number;
  /**
   * Where the session comes from (default: a live run on this machine, its SHA-256 computed here).
   * `attested` defaults to true for the certification service only: a session recorded anywhere
   * else is attested only once its signature was verified.
   */
  provenance?: Omit<Provenance, 'note' | 'attested' | 'mark'> & { attested?: boolean };
}

/** What each source proves, as every report says it. */
export const provenanceNotes: Record<Provenance['source'], string> = {
  live: 'recorded and judged on the machine that ran the journey: evidence for the one who ran it, not against a dishonest submitter, who can edit what a self-hosted stage records; an attested run of the certification service is that evidence',
  rejudged:
    'judged again from a session file: the verdicts follow from the file alone, and the file is only as trustworthy as whoever handed it over; an attested run of the certification service is evidence against a dishonest submitter',
  service:
    'recorded and judged by the certification service, which signs the result: every line of evidence was written by the verifier, not by the integration certified',
};

/** How the journey exercised each operation of the API (calls, successes, refusals by status). */
export function operationsOf(view: SessionView): OperationRecord[] {
  return apiOperationIds.map((operationId) => {
    const operation = operations[operationId];
    const calls = view.apiCalls.filter((call) => call.operationId === operationId);
    const refusals: Record<string, number> = {};
    let successes = 0;
    for (const { exchange } of calls) {
      if (exchange.status >= 200 && exchange.status < 300) successes += 1;
      else refusals[String(exchange.status)] = (refusals[String(exchange.status)] ?? 0) + 1;
    }
    return {
      operationId,
      method: operation.method,
      path: operation.path,
      scope: operation.scope,
      calls: calls.length,
      successes,
      refusals,
      exercised: successes > 0,
    };
  });
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
  const given = options.provenance ?? {
    source: 'live' as const,
    sessionSha256: createHash('sha256').update(formatSession(session)).digest('hex'),
  };
  const attested = given.attested ?? given.source === 'service';
  const provenance: Provenance = {
    ...given,
    attested,
    mark: provenanceMark({ source: given.source, attested }),
    note: provenanceNotes[given.source],
  };
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
  const operations = operationsOf(view);
  const plan = session.plan ?? (options.certify ? options.plan : undefined);
  const coverage = coverageOf(view, operations, checks, plan);
  const outside =
    session.exchanges.filter((exchange) => exchange.outside).length + (session.outsideDropped ?? 0);
  const report: ClientReport = {
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
    journey: {
      ...session.journey,
      calls: { token, api, other: view.session.exchanges.length - token - api },
    },
    scenarios: session.scenarios.map((item) => ({ ...item })),
    recording: {
      exchanges: session.exchanges.length,
      dropped: session.dropped,
      maxExchanges: session.maxExchanges,
      ...(session.clamped !== undefined && { clamped: session.clamped }),
    },
    ...(session.integration && { integration: { ...session.integration } }),
    provenance,
    operations,
    coverage,
    ...(outside > 0 && { outsideTraffic: { exchanges: outside } }),
    ...(session.partner && { partner: { ...session.partner } }),
    ...(plan && { plan: { id: plan.id, digest: plan.digest } }),
    ...(session.service && { service: { ...session.service } }),
  };
  if (options.certify && plan) {
    const reasons = certificationReasons(report, plan, planDigest(plan) === plan.digest);
    report.certification = { passed: reasons.length === 0, reasons };
  }
  return report;
}
