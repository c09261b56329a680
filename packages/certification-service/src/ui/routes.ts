import type { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Database } from '../db/database.js';
import type { Audit } from '../http/api.js';
import type { OidcSignIn } from '../oidc/oidc.js';
import type { Production } from '../production/index.js';
import type { SigninGuard } from '../signin/signin-guard.js';
import { stylesheet } from '../web/html.js';
import { mountUiRedirects } from './addresses.js';
import { type Env, html } from './answer.js';
import { auditPage } from './audit.js';
import { mountPartnerPages } from './partners.js';
import { mountRunPages } from './runs.js';
import { mountSignout, reviewerSessions } from './session.js';
import { mountSignin } from './signin.js';

/**
 * The reviewer UI: sign in with a credential from `admin add-reviewer`; partners and the state of their
 * latest attested run; a partner's runs; a run's report and attestation; approve or reject with a note
 * on an attested run; the audit log. Every form carries the session's CSRF token, and every POST must
 * come from this origin.
 */
export function mountUi(
  app: Hono<Env>,
  deps: {
    db: Database;
    publicUrl: string;
    audit: Audit;
    signin: SigninGuard;
    oidc?: OidcSignIn;
    /** The production rule: approving or rejecting a run goes through `decide` (see production/decide.ts). */
    production: Pick<Production, 'decide'>;
  },
) {
  const sessions = reviewerSessions({ db: deps.db, publicUrl: deps.publicUrl });

  app.get('/ui.css', (c) =>
    c.body(stylesheet, 200, {
      'content-type': 'text/css; charset=utf-8',
      'cache-control': 'public, max-age=3600',
    }),
  );

  // Forms of the UI: small, urlencoded, from this origin (SameSite cookies and the CSRF token do the rest).
  app.use('/signin', bodyLimit({ maxSize: 8 * 1024, onError: (c) => c.text('form too large', 413) }));
  app.use('/ui/*', bodyLimit({ maxSize: 8 * 1024, onError: (c) => c.text('form too large', 413) }));
  mountSignin(app, deps, sessions);
  mountUiRedirects(app);
  for (const path of ['/ui/*', '/signout']) app.use(path, sessions.signedIn);
  mountSignout(app, deps, sessions.secure);
  mountPartnerPages(app, deps.db);
  mountRunPages(app, deps);
  app.get('/ui/audit', async (c) => html(c, await auditPage(deps.db, c.req.query(), c.get('reviewer'))));
}
