import { type DigestedPlan, judgesOfScenario, planScenarioIds } from '../common/certification-plan.js';
import type { ClientReport } from '../common/report.js';
import {
  type CheckResult,
  type CheckStatus,
  type Coverage,
  type CoverageScenario,
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

/** Whether the stage played one scenario on the journey's traffic (never from the stage's word alone). */
function scenarioPlayed(
  id: CoverageScenarioId,
  view: SessionView,
): { met: boolean; detail: string; seq?: number } {
  const { session, apiCalls, tokenRequests, tokens } = view;
  const injected = (step: NonNullable<RecordedExchange['injected']>, what: string, never: string) => {
    const call = apiCalls.find((item) => item.exchange.injected === step);
    return call
      ? { met: true, detail: `${what}: ${line(call.exchange)}`, seq: call.exchange.seq }
      : { met: false, detail: never };
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

/** The first line of a check's details, shortened to one line a reason can carry. */
export const firstLine = (text: string | undefined): string => {
  const first = (text ?? '').split('\n')[0]!.trim();
  return first.length > 240 ? `${first.slice(0, 239)}…` : first;
};

/**
 * What the scenario's own step left to judge, beyond its check's pass: a check judging two scenarios
 * (Retry-After after the 429 and after the 503) may pass on one of them, so a throttle or an outage
 * with no API call after its answer was not shown handled.
 */
function stepJudged(id: CoverageScenarioId, view: SessionView): string | undefined {
  if (id !== 'throttle' && id !== 'unavailable') return undefined;
  const step = id === 'throttle' ? 'throttled' : 'unavailable';
  const answered = view.apiCalls.find((call) => call.exchange.injected === step);
  if (!answered) return undefined;
  return view.apiCalls.some((call) => call.exchange.at > answered.exchange.end)
    ? undefined
    : `the journey made no API call after ${line(answered.exchange)}, so whether it waited was never shown`;
}

/** One scenario: played or not, then handled, not handled or not verified by the checks judging it. */
function scenarioCoverage(
  id: CoverageScenarioId,
  view: SessionView,
  results: readonly CheckResult[],
  plan: DigestedPlan | undefined,
): CoverageScenario {
  const played = scenarioPlayed(id, view);
  const judges = judgesOfScenario(plan, id).map((checkId) => {
    const result = results.find((item) => item.id === checkId);
    const status: CheckStatus | 'not-judged' = result?.status ?? 'not-judged';
    // A check judging several steps (Retry-After after the 429 and the 503) says a line of each: this one's.
    const step =
      played.seq === undefined
        ? undefined
        : result?.details.split('\n').find((text) => text.startsWith(`#${played.seq} `));
    return { id: checkId, status, line: firstLine(step ?? result?.details) };
  });
  const failed = judges.filter((item) => item.status === 'failed' || item.status === 'errored');
  const unverified = judges.filter((item) => item.status === 'skipped' || item.status === 'not-judged');
  const decider = failed[0] ?? unverified[0] ?? judges[0]!;
  const base = {
    id,
    played: played.met,
    check: { id: decider.id, status: decider.status },
    checks: judges.map((item) => ({ id: item.id, status: item.status })),
  };
  const said = (list: typeof judges) =>
    list
      .map((item) =>
        item.status === 'not-judged'
          ? `${item.id} was not judged`
          : `${item.id} ${item.status === 'skipped' ? 'not verified' : item.status} — ${item.line}`,
      )
      .join('; ');
  if (!played.met)
    return { ...base, met: false, outcome: 'not-played', detail: `not played: ${played.detail}` };
  if (failed.length > 0)
    return {
      ...base,
      met: false,
      outcome: 'not-handled',
      detail: `played (${played.detail}); not handled: ${said(failed)}`,
    };
  const gap = unverified.length === 0 ? stepJudged(id, view) : undefined;
  if (unverified.length > 0 || gap !== undefined)
    return {
      ...base,
      met: false,
      outcome: 'not-verified',
      detail: `played (${played.detail}); not verified: ${gap ?? said(unverified)}`,
    };
  return {
    ...base,
    met: true,
    outcome: 'handled',
    detail: `played (${played.detail}); handled: ${said(judges)}`,
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
    ? planScenarioIds(plan)
    : view.session.scenarios.filter((item) => item.enabled).map((item) => item.name);
  return {
    operations: operations.map((item) => ({
      operationId: item.operationId,
      calls: item.calls,
      succeeded: item.successes,
    })),
    scenarios: ids.map((id) => scenarioCoverage(id, view, checks, plan)),
    mustNotVerified: mustNotVerified(checks),
  };
}

/** `<code>: <subject>`, with ` — <detail>` when there is one. */
const reason = (code: string, subject: string, detail?: string) =>
  `${code}: ${subject}${detail ? ` — ${detail}` : ''}`;

/**
 * Why a certification run does not certify under `plan`: stable strings `<code>: <subject>`, with
 * ` — <one line>` saying what was found where there is one; empty when it certifies. Codes:
 * journey-not-completed, plan-digest-mismatch, must-failed (`must-failed: <check> — <first line of its
 * details>`), must-not-verified, operation-not-succeeded, scenario-not-played, scenario-not-handled
 * (`scenario-not-handled: <scenario> (<check>) — …`: its judging check failed), scenario-not-verified
 * (`scenario-not-verified: <scenario> (<check>) — …`: played, but the client had no chance to show the
 * behaviour), decisive-check-failed, decisive-check-not-verified (each with the check's first line).
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
      reasons.push(reason('must-failed', check.id, firstLine(check.details)));
  for (const id of report.coverage.mustNotVerified) {
    const check = report.checks.find((item) => item.id === id);
    reasons.push(reason('must-not-verified', id, firstLine(check?.details)));
  }
  for (const { operationId } of plan.operations) {
    const record = report.coverage.operations.find((item) => item.operationId === operationId);
    if (!record || record.succeeded === 0)
      reasons.push(
        reason(
          'operation-not-succeeded',
          operationId,
          record && record.calls > 0
            ? `${record.calls} call${record.calls === 1 ? '' : 's'}, none succeeded`
            : 'never called',
        ),
      );
  }
  for (const scenario of report.coverage.scenarios) {
    if (scenario.met) continue;
    // The checks that decided it: every failed one when it was not handled, else the one not verified.
    const failedChecks = scenario.checks?.filter(
      (item) => item.status === 'failed' || item.status === 'errored',
    );
    const by =
      scenario.outcome === 'not-handled' && failedChecks && failedChecks.length > 0
        ? ` (${failedChecks.map((item) => item.id).join(', ')})`
        : scenario.check
          ? ` (${scenario.check.id})`
          : '';
    const why = firstLine(scenario.detail);
    if (scenario.outcome === 'not-handled')
      reasons.push(reason('scenario-not-handled', `${scenario.id}${by}`, why));
    else if (scenario.outcome === 'not-verified')
      reasons.push(reason('scenario-not-verified', `${scenario.id}${by}`, why));
    else reasons.push(reason('scenario-not-played', scenario.id, why.replace(/^not played: /, '')));
  }
  for (const id of plan.decisiveShouldChecks) {
    const check = report.checks.find((item) => item.id === id);
    if (!check || check.status === 'skipped')
      reasons.push(
        reason('decisive-check-not-verified', id, check ? firstLine(check.details) : 'not judged'),
      );
    else if (check.status !== 'passed')
      reasons.push(reason('decisive-check-failed', id, firstLine(check.details)));
  }
  return reasons;
}
