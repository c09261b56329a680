import type { Context } from 'hono';
import { unavailableRetrySeconds } from '../errors.js';

/**
 * An RFC 9457 problem: `type` (about:blank unless a page explains it), `title`, `status`, `detail`
 * (what happened and what to do), and any extension member.
 */
export function problem(
  _c: Context,
  status: 400 | 401 | 403 | 404 | 405 | 409 | 413 | 415 | 429 | 500 | 503,
  title: string,
  detail: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify({ type: 'about:blank', title, status, detail, ...extra }), {
    status,
    headers: { 'content-type': 'application/problem+json', 'cache-control': 'no-store', ...headers },
  });
}

/** The answer while the database cannot be reached: 503, when to retry, and nothing of the cause. */
export function unavailable(c: Context): Response {
  return problem(
    c,
    503,
    'Service unavailable',
    `the certification service cannot reach its database just now; retry in ${unavailableRetrySeconds} s`,
    {},
    { 'retry-after': String(unavailableRetrySeconds) },
  );
}
