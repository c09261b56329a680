import { createHash } from 'node:crypto';
import { type ApiOperationId, apiOperationIds, operations, type Scope, scopes } from '@partner-lending/spec';
import { UsageError } from '../errors.js';
import type { ScenarioName } from './records.js';

/**
 * A certification plan: what a certification run must exercise for its pass to mean "certified on what
 * production will let it do". The vendor (the service's operator) sets it; the partner cannot weaken it.
 * Its digest (SHA-256 of its canonical JSON) goes into the session, the report and the attestation.
 */
export interface CertificationPlan {
  /** A name for the plan, stable across runs (e.g. `partner-lending-default-v2`). */
  id: string;
  /** The operations that must each succeed at least once, with the scope each needs (from the spec). */
  operations: { operationId: ApiOperationId; scope: Scope }[];
  /** The scopes the run's client is authorised for: the grant production will give. */
  scopes: Scope[];
  /** The fault scenarios the stage plays; each must be played and handled (its judging check passed). */
  scenarios: ScenarioName[];
  /** Lifetime of the short phase's tokens (s): short enough that a journey renews at least once. */
  ttlSeconds: number;
  /** Lifetime of the tokens after the short phase (s). */
  longTtlSeconds: number;
  /** Whether the journey must renew a token at least once (a `renewal` scenario of the coverage). */
  renewal: boolean;
  /** `should` checks that decide certification like `must` checks (a failure or a "not verified" blocks it). */
  decisiveShouldChecks: string[];
  /**
   * For each scenario the plan plays (and `renewal` when it asks for one), the checks that judge what the
   * client did with it: the scenario is handled only when every one of them passed. `definePlan` fills it
   * from `scenarioJudges` when absent; a plan recorded before it existed (`partner-lending-default-v1`) is
   * read with `scenarioJudges`.
   */
  handledBy?: Partial<Record<PlanScenarioId, string[]>>;
}

/** A scenario a plan names: its fault scenarios, and `renewal` when it asks for one. */
export type PlanScenarioId = ScenarioName | 'renewal';

/**
 * The checks that judge each scenario: a scenario counts as handled only when each passed on the run's
 * traffic, and as not verified when the client had no chance to show the behaviour.
 * - revocation: the revoked token is never sent again and one new token recovers
 *   (`client-revocation-recovery`);
 * - narrowed-grant: no operation outside a token's grant is called with it, shown by an operation
 *   outside the narrowed grant called with a new token while the narrowed one was usable
 *   (`client-granted-scope-respected`);
 * - throttle: no API call of any operation before Retry-After (`client-retry-after`);
 * - unavailable: the same, and the create answered 503 not re-sent — `client-retry-after` judges every
 *   call before the time given but counts a concurrent client's calls of the same moment as in flight
 *   (a busy machine holds them up), so the re-sent create itself is judged by
 *   `client-create-not-replayed`;
 * - renewal: never an expired token (`client-no-expired-token`).
 */
export const scenarioJudges: Readonly<Record<PlanScenarioId, readonly string[]>> = {
  revocation: ['client-revocation-recovery'],
  throttle: ['client-retry-after'],
  unavailable: ['client-retry-after', 'client-create-not-replayed'],
  'narrowed-grant': ['client-granted-scope-respected'],
  renewal: ['client-no-expired-token'],
};

/** The scenario ids a plan lists, in order: its fault scenarios, then `renewal` when it asks for one. */
export const planScenarioIds = (plan: CertificationPlan): PlanScenarioId[] => [
  ...plan.scenarios,
  ...(plan.renewal ? (['renewal'] as const) : []),
];

/** The checks judging `id` under `plan`: the plan's own word, else `scenarioJudges` (plans that predate it). */
export const judgesOfScenario = (plan: CertificationPlan | undefined, id: PlanScenarioId): string[] => [
  ...(plan?.handledBy?.[id] ?? scenarioJudges[id]),
];

/** A plan and its digest. */
export interface DigestedPlan extends CertificationPlan {
  /** Hex SHA-256 of `canonicalJson` of the plan without this field. */
  digest: string;
}

/** The plan's name and digest, as the session, the report and the attestation carry it. */
export interface PlanRef {
  id: string;
  digest: string;
}

const allScenarios: ScenarioName[] = ['revocation', 'throttle', 'unavailable', 'narrowed-grant'];

/** JSON with object keys sorted at every level and no whitespace: the bytes a plan digest is taken of. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.keys(value)
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

/** The hex SHA-256 of a plan's canonical JSON (its `digest` field left out). */
export function planDigest(plan: CertificationPlan): string {
  const { digest: _ignored, ...rest } = plan as DigestedPlan;
  return createHash('sha256').update(canonicalJson(rest)).digest('hex');
}

const fail = (message: string): never => {
  throw new UsageError(`certification plan: ${message}`);
};

/**
 * Checks an operator's plan and gives it its digest: every operation and scope is the spec's, each
 * operation's scope is granted, the lifetimes are bounded and the short one lets a journey renew.
 */
export function definePlan(plan: CertificationPlan): DigestedPlan {
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(plan.id))
    fail(`id ${JSON.stringify(String(plan.id).slice(0, 80))} must be 1–64 letters, digits, dots, dashes`);
  if (plan.operations.length === 0) fail('it names no operation; name at least one of the API');
  for (const item of plan.operations) {
    if (!apiOperationIds.includes(item.operationId))
      fail(
        `operation ${JSON.stringify(String(item.operationId).slice(0, 80))} is not one of the API's (${apiOperationIds.join(', ')})`,
      );
    if (item.scope !== operations[item.operationId].scope)
      fail(
        `operation ${item.operationId} needs scope ${operations[item.operationId].scope}, not ${item.scope}`,
      );
    if (!plan.scopes.includes(item.scope))
      fail(`operation ${item.operationId} needs scope ${item.scope}, which the plan's scopes do not grant`);
  }
  for (const scope of plan.scopes)
    if (!scopes.includes(scope)) fail(`scope ${JSON.stringify(String(scope).slice(0, 80))} is not the API's`);
  for (const name of plan.scenarios)
    if (!allScenarios.includes(name))
      fail(`scenario ${JSON.stringify(String(name).slice(0, 80))} is not one of ${allScenarios.join(', ')}`);
  if (!Number.isInteger(plan.ttlSeconds) || plan.ttlSeconds < 1 || plan.ttlSeconds > 3600)
    fail(`ttlSeconds must be a whole number of seconds from 1 to 3600, not ${plan.ttlSeconds}`);
  if (!Number.isInteger(plan.longTtlSeconds) || plan.longTtlSeconds < 1 || plan.longTtlSeconds > 86_400)
    fail(`longTtlSeconds must be a whole number of seconds from 1 to 86400, not ${plan.longTtlSeconds}`);
  for (const id of plan.decisiveShouldChecks)
    if (!/^client-[a-z0-9-]{1,60}$/.test(id))
      fail(`decisive check ${JSON.stringify(String(id).slice(0, 80))} is not a client check id`);
  const ids = planScenarioIds(plan);
  // Entries for scenarios the plan does not play are left out (a plan made from the default one with
  // fewer scenarios keeps only its own); each named check must be a client check id.
  for (const [id, checks] of Object.entries(plan.handledBy ?? {})) {
    if (!(id in scenarioJudges))
      fail(
        `handledBy names ${JSON.stringify(String(id).slice(0, 80))}, which is not a scenario (${Object.keys(scenarioJudges).join(', ')})`,
      );
    if (!Array.isArray(checks) || checks.length === 0)
      fail(`handledBy.${id} must list at least one client check id`);
    for (const check of checks)
      if (!/^client-[a-z0-9-]{1,60}$/.test(String(check)))
        fail(`handledBy.${id}: ${JSON.stringify(String(check).slice(0, 80))} is not a client check id`);
  }
  const copy: CertificationPlan = {
    id: plan.id,
    operations: plan.operations.map((item) => ({ operationId: item.operationId, scope: item.scope })),
    scopes: [...plan.scopes],
    scenarios: [...plan.scenarios],
    ttlSeconds: plan.ttlSeconds,
    longTtlSeconds: plan.longTtlSeconds,
    renewal: plan.renewal,
    decisiveShouldChecks: [...plan.decisiveShouldChecks],
    handledBy: Object.fromEntries(ids.map((id) => [id, judgesOfScenario(plan, id)])),
  };
  return { ...copy, digest: planDigest(copy) };
}

/**
 * The default certification plan: the four operations of §4.2 with the four scopes production grants,
 * every fault scenario (the narrowed grant played by the token endpoint once, since every scope is
 * authorised), 5-s tokens for the first 15 s (at least one renewal) then 3600-s ones, each scenario
 * handled only when its judging check passed (`handledBy`), and token reuse, Retry-After, revocation
 * recovery and the granted scope deciding like `must` checks.
 *
 * Changes (a change of the plan changes its digest, and its id):
 * - `partner-lending-default-v2`: `handledBy` names the checks judging each scenario (a scenario is met
 *   when they passed, not when the stage played it; not verified blocks certification);
 *   `client-revocation-recovery` and `client-granted-scope-respected` decide; the revocation never
 *   revokes the token of the narrowed grant.
 * - `partner-lending-default-v1`: the four operations, every scenario played, a renewal; token reuse
 *   and Retry-After decisive.
 */
export const certificationPlan: DigestedPlan = definePlan({
  id: 'partner-lending-default-v2',
  operations: apiOperationIds.map((operationId) => ({
    operationId,
    scope: operations[operationId].scope as Scope,
  })),
  scopes: [...scopes],
  scenarios: [...allScenarios],
  ttlSeconds: 5,
  longTtlSeconds: 3600,
  renewal: true,
  decisiveShouldChecks: [
    'client-token-reuse',
    'client-retry-after',
    'client-revocation-recovery',
    'client-granted-scope-respected',
  ],
  handledBy: Object.fromEntries(Object.entries(scenarioJudges).map(([id, checks]) => [id, [...checks]])),
});

/** The id and digest of a plan. */
export const planRefOf = (plan: DigestedPlan): PlanRef => ({ id: plan.id, digest: plan.digest });
