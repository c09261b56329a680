import type { Context, Hono } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { Database } from '../db/database.js';
import type { Audit } from '../http/api.js';
import { derivedSecret, hashSecret, newSecret, sameText } from '../secrets.js';
import { page } from '../web/html.js';
import { type Env, html } from './answer.js';

const cookieName = 'pcs_session';
/** A reviewer's sign-in lasts this long. */
const sessionHours = 8;

/**
 * Reviewers' sessions: a cookie holding a token (the database has its hash), a CSRF token derived from
 * it, and the origin check every POST passes.
 */
export function reviewerSessions(deps: { db: Database; publicUrl: string }) {
  const { db } = deps;
  const secure = deps.publicUrl.startsWith('https:');
  const origin = new URL(deps.publicUrl).origin;
  const fromHere = (c: Context) => {
    const from = c.req.header('origin') ?? c.req.header('referer');
    return from !== undefined && safeOrigin(from) === origin;
  };

  const startSession = async (c: Context, reviewerId: string) => {
    const token = newSecret('pcs_session');
    await db.query(
      `INSERT INTO reviewer_sessions (token_hash, reviewer_id, expires_at) VALUES ($1, $2, now() + interval '${sessionHours} hours')`,
      [hashSecret(token), reviewerId],
    );
    await db.query('DELETE FROM reviewer_sessions WHERE expires_at < now()');
    setCookie(c, cookieName, token, {
      httpOnly: true,
      sameSite: 'Strict',
      secure,
      path: '/',
      maxAge: sessionHours * 3600,
    });
  };
  // Everything else of the UI needs a signed-in reviewer; a POST also needs this origin and the CSRF token.
  const signedIn = async (c: Context<Env>, next: () => Promise<void>) => {
    const token = getCookie(c, cookieName);
    const [session] = token
      ? await db.query<{ id: string; name: string }>(
          `SELECT r.id, r.name FROM reviewer_sessions s JOIN reviewers r ON r.id = s.reviewer_id
           WHERE s.token_hash = $1 AND s.expires_at > now()`,
          [hashSecret(token)],
        )
      : [];
    if (!session) {
      if (c.req.method === 'GET') return c.redirect('/signin', 303);
      return html(c, page('Signed out', '<p>Sign in again: <a href="/signin">sign in</a>.</p>'), 401);
    }
    // The CSRF token is bound to the session without being stored: an HMAC keyed by the session token,
    // which only the reviewer's cookie holds (the database has its hash).
    const csrf = derivedSecret(token!, 'csrf', 'reviewer UI');
    c.set('reviewer', { id: session.id, name: session.name, csrf });
    if (c.req.method === 'POST') {
      const form = await c.req.parseBody();
      if (!fromHere(c) || typeof form.csrf !== 'string' || !sameText(form.csrf, csrf))
        return html(
          c,
          page(
            'Refused',
            '<p class="error">This form was not sent from this site’s page (CSRF check failed). Reload the page and try again.</p>',
            c.get('reviewer'),
          ),
          403,
        );
    }
    await next();
  };
  return { fromHere, startSession, signedIn, secure };
}

export type ReviewerSessions = ReturnType<typeof reviewerSessions>;

/** POST /signout: the session ends (behind `signedIn`). */
export function mountSignout(app: Hono<Env>, deps: { db: Database; audit: Audit }, secure: boolean) {
  const { db } = deps;
  app.post('/signout', async (c) => {
    const token = getCookie(c, cookieName);
    if (token) await db.query('DELETE FROM reviewer_sessions WHERE token_hash = $1', [hashSecret(token)]);
    deleteCookie(c, cookieName, { path: '/', secure });
    await deps.audit(`reviewer:${c.get('reviewer').id}`, 'signout', null, {});
    return c.redirect('/signin', 303);
  });
}

function safeOrigin(value: string): string | undefined {
  try {
    return new URL(value).origin;
  } catch {
    return undefined;
  }
}
