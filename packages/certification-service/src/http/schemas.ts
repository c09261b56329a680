import { scenarioNames } from '@partner-lending/conformance';
import { scopes } from '@partner-lending/spec';
import { z } from 'zod';

// biome-ignore lint/suspicious/noControlCharactersInRegex: names and versions carry no control characters
const printable = /^(?:[^\u0000-\u001f\u007f\uD800-\uDFFF]|[\uD800-\uDBFF][\uDC00-\uDFFF])*$/;
const text = (max: number) =>
  z.string().min(1).max(max).regex(printable, 'no control characters and no unpaired surrogates');

/**
 * Text from a request that the database cannot hold or a reader should not see: a control character
 * other than tab, CR and LF (NUL included, which PostgreSQL text refuses), or an unpaired UTF-16
 * surrogate (which UTF-8 cannot encode).
 */
export const hostileText =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the pattern finds control characters to refuse them
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The body of `POST /api/runs`: every field optional, nothing else allowed. */
export const runRequestSchema = z.strictObject({
  ttlSeconds: z
    .number()
    .int()
    .min(1)
    .max(86_400)
    .optional()
    .describe('Token lifetime of the short phase (`--ttl`), default 5.'),
  longTtlSeconds: z
    .number()
    .int()
    .min(600)
    .max(10 * 365 * 86_400)
    .optional()
    .describe('Token lifetime after it (`--long-ttl`), default 3600.'),
  scenarios: z
    .array(z.enum(scenarioNames as [string, ...string[]]))
    .max(scenarioNames.length)
    .refine((list) => new Set(list).size === list.length, 'each scenario at most once')
    .meta({ uniqueItems: true })
    .optional()
    .describe('The scenario steps to play, each at most once (default all; [] for none).'),
  scopes: z
    .array(z.enum(scopes as unknown as [string, ...string[]]))
    .min(1)
    .max(scopes.length)
    .optional()
    .describe('The grant under narrowed-grant (default read:loans create:loan_draft).'),
  integration: z.strictObject({ name: text(100).optional(), version: text(100).optional() }).optional(),
  certify: z
    .boolean()
    .optional()
    .describe(
      '`--certify` rules: a skipped must check or a journey that did not exit 0 fails the run. Only such runs can be approved.',
    ),
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
