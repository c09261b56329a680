import { z } from 'zod';

// The pieces of /openapi.json that the partner API's operations share: request bodies from their zod
// schemas, problem answers, and the statuses every operation (or every one with a body) may answer.

/** A JSON Schema as zod writes it, less its `$schema` (named, for the document's declared type). */
export interface BodySchema extends Omit<z.core.JSONSchema.BaseSchema, '$schema'> {}

/** A request body's JSON Schema, from the zod schema that validates it (so the two cannot disagree). */
export const bodySchema = (schema: z.ZodType): BodySchema => {
  const { $schema: _, ...json } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
  return json;
};

export const problem = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
});
export const retryAfter = {
  'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'string' } },
};
const limited = (description: string) => ({ ...problem(description), headers: retryAfter });
export const json = (description: string, schema: object = { type: 'object' }) => ({
  description,
  content: { 'application/json': { schema } },
});

/** What every API operation may answer besides its own statuses. */
export const common = {
  '401': problem('No API key, or an unknown one (with a `WWW-Authenticate: Bearer` challenge).'),
  '429': limited(
    'This partner sent too many requests, or has too many in flight (see Retry-After); for a creation, also too many open runs or runs this hour.',
  ),
  '503': limited(
    'The service cannot reach its database just now, or (finishing a run) could not judge it and left it open (see Retry-After).',
  ),
};
/** What an operation with a body may answer besides. */
export const withBody = {
  '400': problem(
    'The body is not valid JSON, not valid for this operation, or holds text the service cannot store.',
  ),
  '413': problem('The body is larger than 16 KiB.'),
  '415': problem('The body is not application/json.'),
};
