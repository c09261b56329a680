import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  defaultLongTtlSeconds,
  defaultTtlSeconds,
  type ScenarioName,
  scenarioNames,
} from '@partner-lending/conformance';
import { type ApiOperationId, scopes as allScopes, apiOperationIds, operations } from '@partner-lending/spec';
import { z } from 'zod';
import { ServiceError } from '../errors.js';

/** The should-checks that may decide approval like a must (the plan names which do). */
export const decisiveCandidates = ['client-token-reuse', 'client-retry-after'] as const;

/**
 * The vendor's certification plan: what a certification run (`certify: true`) exercises and what it
 * must show to be approvable. The partner cannot change it; the operator configures it (`serve --plan FILE`).
 */
export interface CertificationPlan {
  /** A name the operator gives the plan (e.g. "default-2026"). */
  id: string;
  /** SHA-256 (hex) of the plan's canonical JSON (every field but this one, keys sorted). */
  digest: string;
  /** The operations of the API a run must call with success at least once, each with its scope. */
  operations: Array<{ operationId: ApiOperationId; scope: string }>;
  /** The fault scenarios the run plays; each must be met. */
  scenarios: ScenarioName[];
  /** Token lifetime of the run's short phase, and of its long phase (s). */
  ttlSeconds: number;
  longTtlSeconds: number;
  /** Should-checks that decide approval like a must. */
  decisiveShouldChecks: string[];
}

/** What a plan file holds (everything optional but its id; the defaults fill the rest). */
const planFileSchema = z.strictObject({
  id: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, ".", "_" and "-" only'),
  operations: z
    .array(z.enum(apiOperationIds as [ApiOperationId, ...ApiOperationId[]]))
    .min(1)
    .refine((list) => new Set(list).size === list.length, 'each operation at most once')
    .optional(),
  scenarios: z
    .array(z.enum(scenarioNames as [ScenarioName, ...ScenarioName[]]))
    .refine((list) => new Set(list).size === list.length, 'each scenario at most once')
    .optional(),
  ttlSeconds: z.number().int().min(1).max(86_400).optional(),
  longTtlSeconds: z
    .number()
    .int()
    .min(600)
    .max(10 * 365 * 86_400)
    .optional(),
  decisiveShouldChecks: z.array(z.enum(decisiveCandidates)).optional(),
});

export type PlanFile = z.input<typeof planFileSchema>;

const canonical = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(canonical).join(',')}]`
    : value !== null && typeof value === 'object'
      ? `{${Object.keys(value)
          .sort()
          .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
          .join(',')}}`
      : JSON.stringify(value);

/** A plan from its fields: the defaults for what is absent, and its digest. */
export function makePlan(file: PlanFile): CertificationPlan {
  const parsed = planFileSchema.parse(file);
  const body: Omit<CertificationPlan, 'digest'> = {
    id: parsed.id,
    operations: (parsed.operations ?? apiOperationIds).map((operationId) => ({
      operationId,
      scope: operations[operationId].scope,
    })),
    scenarios: parsed.scenarios ?? [...scenarioNames],
    ttlSeconds: parsed.ttlSeconds ?? defaultTtlSeconds,
    longTtlSeconds: parsed.longTtlSeconds ?? defaultLongTtlSeconds,
    decisiveShouldChecks: parsed.decisiveShouldChecks ?? [...decisiveCandidates],
  };
  return { ...body, digest: createHash('sha256').update(canonical(body)).digest('hex') };
}

/**
 * The default plan: every operation of the API (§4.2) with its scope, every fault scenario, the
 * CLI's lifetimes, token reuse and Retry-After deciding like musts.
 */
export const defaultPlan: CertificationPlan = makePlan({ id: 'default' });

/** The scopes production grants a partner certified under `plan`: those of its operations. */
export const planScopes = (plan: CertificationPlan): string[] =>
  allScopes.filter((scope) => plan.operations.some((operation) => operation.scope === scope));

/** Reads an operator's plan file (JSON); a clear error names what is wrong. */
export function loadPlanFile(file: string): CertificationPlan {
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
  const parsed = planFileSchema.safeParse(json);
  if (!parsed.success)
    throw new ServiceError(
      'ERR_CONFIG',
      `--plan ${file}: ${parsed.error.issues
        .slice(0, 5)
        .map((issue) => `${issue.path.join('.') || 'the file'}: ${issue.message}`)
        .join(
          '; ',
        )} (expected {"id": "...", "operations"?: [...], "scenarios"?: [...], "ttlSeconds"?, "longTtlSeconds"?, "decisiveShouldChecks"?})`,
    );
  return makePlan(parsed.data);
}
