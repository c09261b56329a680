import { scenarioNames } from '@partner-lending/conformance';
import { scopes } from '@partner-lending/spec';
import { z } from 'zod';

// biome-ignore lint/suspicious/noControlCharactersInRegex: names and versions carry no control characters
const printable = /^[^\u0000-\u001f\u007f]*$/;
const text = (max: number) => z.string().min(1).max(max).regex(printable, 'no control characters');

/** The body of `POST /api/runs`: every field optional, nothing else allowed. */
export const runRequestSchema = z.strictObject({
  ttlSeconds: z.number().int().min(1).max(86_400).optional(),
  longTtlSeconds: z
    .number()
    .int()
    .min(600)
    .max(10 * 365 * 86_400)
    .optional(),
  scenarios: z
    .array(z.enum(scenarioNames as [string, ...string[]]))
    .max(scenarioNames.length)
    .refine((list) => new Set(list).size === list.length, 'each scenario at most once')
    .optional(),
  scopes: z
    .array(z.enum(scopes as unknown as [string, ...string[]]))
    .min(1)
    .max(scopes.length)
    .optional(),
  integration: z.strictObject({ name: text(100).optional(), version: text(100).optional() }).optional(),
  certify: z.boolean().optional(),
});

/** The body of `POST /api/runs/{id}/finish`. */
export const finishSchema = z.strictObject({
  journeyExitCode: z.number().int().min(-255).max(255).nullable().optional(),
});

/** What a zod error says, in one line a partner can act on. */
export function issuesText(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : 'the body'}: ${issue.message}`)
    .join('; ');
}
