import type { DigestedPlan } from '../common/certification-plan.js';
import type { ClientReport } from '../common/report.js';
import {
  type CheckResult,
  type Coverage,
  journeyFailureOf,
  mustNotVerified,
  type OperationRecord,
} from '../common/report.js';
import type { ClientSession, RecordedExchange } from './session.js';
import { line, requestedScopes, type SessionView } from './view.js';

/** The scenario ids a coverage lists: the plan's fault scenarios, then `renewal` when the plan asks for one. */
export type CoverageScenarioId = ClientSession['scenarios'][number]['name'] | 'renewal';

const insufficientScope = (exchange: RecordedExchange) =>
  exchange.status === 403 &&
  /insufficient_scope/.test(`${exchange.responseHeaders['www-authenticate'] ?? ''} ${exchange.error ?? ''}`);

/** Whether the journey met one scenario, judged from its own traffic (never from the stage's word alone). */
function scenarioMet(id: CoverageScenarioId, view: SessionView): { met: boolean; detail: string } {
  const { session, apiCalls, tokenRequests, tokens } = view;
  const injected = (step: NonNullable<RecordedExchange['injected']>, what: string, never: string) => {
    const call = apiCalls.find((item) => item.exchange.injected === step);
    return call ? { met: true, detail: `${what}: ${line(call.exchange)}` } : { met: false, detail: never };
  };
  if (id === 'revocation')
    return injected(
      'revoked',
      'a token was revoked under the journey',
      'no token was revoked: the journey made fewer API calls that would have succeeded than the revocation waits for',
    );
  if (id === 'throttle')
    return injected(
      'throttled',
      'a call was answered 429 with Retry-After',
      'no call was answered 429: the journey made fewer API calls that would have succeeded than the throttle waits for',
    );
  if (id === 'unavailable')
    return injected(
      'unavailable',
      'a create was answered 503',
      'no create was answered 503: the journey made no create that would have succeeded',
    );
  if (id === 'narrowed-grant') {
    const authorised = session.stage.authorizedScopes;
    const narrowed = tokenRequests.find((exchange) => {
      if (exchange.status === 400 && exchange.error === 'invalid_scope') return true;
      const token = exchange.issued ? tokens.get(exchange.issued) : undefined;
      return (
        token !== undefined &&
        requestedScopes(exchange, authorised).some(
          (scope) => authorised.includes(scope) && !token.scope.includes(scope),
        )
      );
    });
    if (narrowed)
      return { met: true, detail: `a token request got fewer scopes than asked: ${line(narrowed)}` };
    const refused = apiCalls.find((call) => insufficientScope(call.exchange));
    if (refused)
      return { met: true, detail: `a call was answered 403 insufficient_scope: ${line(refused.exchange)}` };
    return {
      met: false,
      detail:
        'no token request got fewer scopes than it asked and no call was answered 403 insufficient_scope: the journey never asked for a scope beyond the narrowed grant',
    };
  }
  // renewal: a token asked for once an earlier one had lived half its life, or was revoked.
  for (const request of tokenRequests) {
    if (request.issued === undefined) continue;
    const earlier = [...tokens.values()].find(
      (token) =>
        token.issuedAt < request.at &&
        token.ref !== request.issued &&
        (request.at >= token.issuedAt + (token.expAt - token.issuedAt) / 2 ||
          (token.revokedAt !== undefined && token.revokedAt <= request.at)),
    );
    if (earlier)
      return {
        met: true,
        detail: `${line(request)} renewed ${earlier.ref} (issued at ${earlier.issuedAt} ms)`,
      };
  }
  return {
    met: false,
    detail:
      'no token was renewed: the journey never asked for a new token once one had lived half its lifetime (run it longer than the short phase)',
  };
}

/** The coverage of a judged session: its operations, its plan's scenarios, its must checks not verified. */
export function coverageOf(
  view: SessionView,
  operations: readonly OperationRecord[],
  checks: readonly CheckResult[],
  plan: DigestedPlan | undefined,
): Coverage {
  const ids: CoverageScenarioId[] = plan
    ? [...plan.scenarios, ...(plan.renewal ? (['renewal'] as const) : [])]
    : view.session.scenarios.filter((item) => item.enabled).map((item) => item.name);
  return {
    operations: operations.map((item) => ({
      operationId: item.operationId,
      calls: item.calls,
      succeeded: item.successes,
    })),
    scenarios: ids.map((id) => ({ id, ...scenarioMet(id, view) })),
    mustNotVerified: mustNotVerified(checks),
  };
}

/**
 * Why a certification run does not certify under `plan`: stable strings `<code>: <subject>`, empty when
 * it does. Codes: journey-not-completed, plan-digest-mismatch, must-failed, must-not-verified,
 * operation-not-succeeded, scenario-not-met, decisive-check-failed, decisive-check-not-verified.
 */
export function certificationReasons(
  report: Pick<ClientReport, 'checks' | 'coverage' | 'journey' | 'mode'>,
  plan: DigestedPlan,
  digestMatches = true,
): string[] {
  const reasons: string[] = [];
  const journey = journeyFailureOf(report as ClientReport);
  if (journey !== undefined) reasons.push(`journey-not-completed: ${journey}`);
  if (!digestMatches) reasons.push(`plan-digest-mismatch: ${plan.id}`);
  for (const check of report.checks)
    if (check.severity === 'must' && (check.status === 'failed' || check.status === 'errored'))
      reasons.push(`must-failed: ${check.id}`);
  for (const id of report.coverage.mustNotVerified) reasons.push(`must-not-verified: ${id}`);
  for (const { operationId } of plan.operations) {
    const record = report.coverage.operations.find((item) => item.operationId === operationId);
    if (!record || record.succeeded === 0) reasons.push(`operation-not-succeeded: ${operationId}`);
  }
  for (const scenario of report.coverage.scenarios)
    if (!scenario.met) reasons.push(`scenario-not-met: ${scenario.id}`);
  for (const id of plan.decisiveShouldChecks) {
    const check = report.checks.find((item) => item.id === id);
    if (!check || check.status === 'skipped') reasons.push(`decisive-check-not-verified: ${id}`);
    else if (check.status !== 'passed') reasons.push(`decisive-check-failed: ${id}`);
  }
  return reasons;
}
