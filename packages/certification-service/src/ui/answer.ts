import type { Context } from 'hono';
import { uiContentSecurityPolicy } from '../web/html.js';

/** The signed-in reviewer, as the UI's routes see them. */
export interface Reviewer {
  id: string;
  name: string;
  csrf: string;
}

export type Env = { Variables: { reviewer: Reviewer } };

/** A page of the reviewer UI, with its headers. */
export const html = (c: Context, body: string, status: 200 | 400 | 401 | 403 | 404 | 409 | 429 = 200) =>
  c.html(body, status, {
    'content-security-policy': uiContentSecurityPolicy,
    'x-content-type-options': 'nosniff',
    // same-origin, not no-referrer: under no-referrer a browser sends `Origin: null` with the UI's own
    // forms, and the origin check (session.ts) would refuse them.
    'referrer-policy': 'same-origin',
    'cache-control': 'no-store',
  });
