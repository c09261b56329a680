import { readFileSync } from 'node:fs';
import {
  type CertificationPlan,
  ConformanceError,
  certificationPlan,
  type DigestedPlan,
  definePlan,
  judgesOfScenario,
  type PlanScenarioId,
  type ScenarioName,
  scenarioJudges,
} from '@partner-lending/conformance';
import { type ApiOperationId, operations, type Scope } from '@partner-lending/spec';
import { ServiceError, UsageError } from '../errors.js';

export type { DigestedPlan };

/**
 * What an operator's plan file holds: the plan's id, and any field of the conformance suite's
 * certification plan to change (the default plan fills the rest); operations are named by operationId.
 */
export interface PlanFile {
  id: string;
  operations?: ApiOperationId[];
  scopes?: Scope[];
  scenarios?: ScenarioName[];
  ttlSeconds?: number;
  longTtlSeconds?: number;
  renewal?: boolean;
  decisiveShouldChecks?: string[];
}

const fields = [
  'id',
  'operations',
  'scopes',
  'scenarios',
  'ttlSeconds',
  'longTtlSeconds',
  'renewal',
  'decisiveShouldChecks',
] as const;

/**
 * The vendor's certification plan from the operator's fields: the suite's default plan
 * (`partner-lending-default-v2`: the four operations with the scopes production grants, every fault
 * scenario, a renewal, token reuse and Retry-After deciding like musts) with the fields given replaced,
 * checked and digested by the suite. Throws a UsageError naming what is wrong.
 */
export function makePlan(file: PlanFile): DigestedPlan {
  const unknown = Object.keys(file).filter((key) => !(fields as readonly string[]).includes(key));
  if (unknown.length > 0)
    throw new UsageError(
      `certification plan: unknown field ${unknown.map((key) => JSON.stringify(key.slice(0, 40))).join(', ')} (the fields are ${fields.join(', ')})`,
    );
  const { digest: _digest, ...defaults } = certificationPlan;
  const plan: CertificationPlan = {
    ...defaults,
    ...file,
    decisiveShouldChecks: file.decisiveShouldChecks ?? decisiveFor(file.scenarios, file.renewal),
    operations: (file.operations ?? defaults.operations.map((item) => item.operationId)).map(
      (operationId) => ({
        operationId,
        scope: (operations as Record<string, { scope: string | null }>)[operationId]?.scope as Scope,
      }),
    ),
  };
  try {
    return definePlan(plan);
  } catch (error) {
    // The suite's words, in the service's family.
    if (error instanceof ConformanceError) throw new UsageError(error.message, { cause: error });
    throw error;
  }
}

/**
 * The default plan's decisive checks for a plan that plays `scenarios` (and a renewal or not): each of
 * the default's, less those that only judge a scenario the plan does not play — a check such as
 * client-granted-scope-respected can only be verified when its scenario (a narrowed grant) happens,
 * so keeping it decisive without the scenario would leave every run of the plan not approvable.
 */
function decisiveFor(scenarios: ScenarioName[] | undefined, renewal: boolean | undefined): string[] {
  const played = new Set<string>([
    ...(scenarios ?? certificationPlan.scenarios),
    ...((renewal ?? certificationPlan.renewal) ? ['renewal'] : []),
  ]);
  const judgesOf = (ids: Iterable<string>) =>
    new Set([...ids].flatMap((id) => judgesOfScenario(certificationPlan, id as PlanScenarioId)));
  const kept = judgesOf(played);
  const allJudges = judgesOf(Object.keys(scenarioJudges));
  return certificationPlan.decisiveShouldChecks.filter((id) => kept.has(id) || !allJudges.has(id));
}

/** The default plan: the conformance suite's. */
export const defaultPlan: DigestedPlan = certificationPlan;

/** The production scopes a run certified under `plan` is approved for: those of its operations. */
export const planScopes = (plan: CertificationPlan): string[] => [
  ...new Set(plan.operations.map((operation) => operation.scope)),
];

/** Reads an operator's plan file (JSON); a clear error names what is wrong. */
export function loadPlanFile(file: string): DigestedPlan {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ServiceError('ERR_CONFIG', `--plan ${file}: cannot read it (${(error as Error).message})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ServiceError('ERR_CONFIG', `--plan ${file}: not valid JSON`);
  }
  const expected = `expected {"id": "...", ${fields
    .slice(1)
    .map((field) => `"${field}"?`)
    .join(', ')}}`;
  if (
    json === null ||
    typeof json !== 'object' ||
    Array.isArray(json) ||
    typeof (json as { id?: unknown }).id !== 'string'
  )
    throw new ServiceError('ERR_CONFIG', `--plan ${file}: ${expected}`);
  try {
    return makePlan(json as PlanFile);
  } catch (error) {
    if (error instanceof UsageError || error instanceof TypeError)
      throw new ServiceError('ERR_CONFIG', `--plan ${file}: ${(error as Error).message} (${expected})`);
    throw error;
  }
}
