import type { Hono } from 'hono';
import type { Database } from '../db/database.js';
import type { Audit } from '../http/api.js';
import type { OidcSignIn } from '../oidc/oidc.js';
import { hashSecret } from '../secrets.js';
import type { SigninGuard } from '../signin/signin-guard.js';
import { h, page } from '../web/html.js';
import { type Env, html } from './answer.js';
import type { ReviewerSessions } from './session.js';

/**
 * Signing in: with a credential from `admin add-reviewer` (guessing slowed by the sign-in guard), or,
 * with --oidc-issuer, through the identity provider only.
 */
export function mountSignin(
  app: Hono<Env>,
  deps: { db: Database; audit: Audit; signin: SigninGuard; oidc?: OidcSignIn },
  sessions: ReviewerSessions,
) {
  const { db } = deps;
  const { startSession, fromHere } = sessions;
  // With --oidc-issuer, reviewers sign in through the identity provider only (see src/oidc).
  deps.oidc?.mount(app, { startSession, html, signin: deps.signin });
  const oidcPage = () =>
    page(
      'Sign in',
      `<p><a href="/signin/oidc" id="oidc-signin">Sign in with your organisation's account</a></p><p class="muted">${h(deps.oidc?.issuer)}</p>`,
    );
  app.get('/signin', (c) => html(c, deps.oidc ? oidcPage() : signinPage()));
  app.post('/signin', async (c) => {
    if (deps.oidc) return html(c, oidcPage(), 403);
    if (!fromHere(c)) return html(c, signinPage('This form must be sent from this site.'), 403);
    // Guessing is slowed before the credential is looked at (see signin-guard.ts).
    const address = deps.signin.addressOf(c);
    const wait = await deps.signin.throttled(address);
    if (wait > 0) {
      const answer = html(c, signinPage(`Too many failed sign-ins: try again in ${wait} s.`), 429);
      answer.headers.set('retry-after', String(wait));
      return answer;
    }
    const form = await c.req.parseBody();
    const credential = typeof form.credential === 'string' ? form.credential.trim() : '';
    const [reviewer] = credential
      ? await db.query<{ id: string; name: string }>(
          'SELECT id, name FROM reviewers WHERE credential_hash = $1',
          [hashSecret(credential)],
        )
      : [];
    if (!reviewer) {
      await deps.signin.failed(address);
      return html(c, signinPage('That credential is not valid.'), 401);
    }
    await startSession(c, reviewer.id);
    await deps.audit(`reviewer:${reviewer.id}`, 'signin', null, {});
    return c.redirect('/ui/partners', 303);
  });
}

function signinPage(error?: string): string {
  return page(
    'Sign in',
    `${error ? `<p class="error">${h(error)}</p>` : ''}<form method="post" action="/signin">
<p><label for="credential">Reviewer credential (from <code>partner-certification-service admin add-reviewer</code>)</label><br>
<input id="credential" name="credential" type="password" autocomplete="current-password" size="60" required></p>
<button>Sign in</button></form>`,
  );
}
