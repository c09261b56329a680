import { scenarioNames } from '@partner-lending/conformance';
import { scopes } from '@partner-lending/spec';
import { z } from 'zod';

// biome-ignore lint/suspicious/noControlCharactersInRegex: names and versions carry no control characters
const printable = /^[^\u0000-\u001f\u007f]*$/;
const text = (max: number) => z.string().min(1).max(max).regex(printable, 'no control characters');

const scopeList = scopes.map((scope) => `"${scope}"`).join(', ');
const scopesMessage = `an array of 1 to ${scopes.length} scope names, e.g. ["read:loans", "create:loan_draft"] (not one space-separated string); the scopes are ${scopeList}`;
const scopeMessage = `each scope is one of ${scopeList}`;

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
  // An array of scope names: a string (the form `scope` parameter's space-separated list) is refused
  // with a message that shows the array.
  scopes: z
    .array(z.enum(scopes as unknown as [string, ...string[]], { error: scopeMessage }), {
      error: scopesMessage,
    })
    .min(1, { error: scopesMessage })
    .max(scopes.length, { error: scopesMessage })
    .refine((list) => new Set(list).size === list.length, 'each scope at most once')
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
