import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context } from 'hono';
import { problem } from '../web/problem.js';

// What the partner API's routes share: the request's environment (the partner it is, once the door
// admitted it), the audit line, and a body read as JSON.

/** The API's Hono environment: Node's request and response, and the partner the key named. */
export type ApiEnv = {
  Bindings: { incoming: IncomingMessage; outgoing: ServerResponse };
  Variables: { partnerId: string };
};

/** Appends a line to the audit log (its one definition is audit.ts's). */
export type { Audit } from '../audit.js';

/** The request's body as JSON (`{}` when empty), or the 415 or 400 that refuses it. */
export async function jsonBody(c: Context): Promise<unknown | Response> {
  const text = await c.req.text();
  if (text.trim() === '') return {};
  const type = c.req.header('content-type') ?? '';
  if (!/^application\/json\b/i.test(type))
    return problem(
      c,
      415,
      'JSON expected',
      `send the body as application/json (got ${type.slice(0, 60) || 'no content type'})`,
    );
  try {
    return JSON.parse(text);
  } catch {
    return problem(c, 400, 'Invalid JSON', 'the body is not valid JSON');
  }
}
