import { createHash } from 'node:crypto';
import type { Context, Hono } from 'hono';
import { deleteCookie, getSignedCookie, setSignedCookie } from 'hono/cookie';
import * as client from 'openid-client';
import { writeAudit } from '../audit.js';
import type { Database } from '../db/database.js';
import { ServiceError, UsageError } from '../errors.js';
import type { Audit } from '../http/api.js';
import type { LogLine } from '../observability/logger.js';
import type { SigninGuard } from '../signin/signin-guard.js';
import { h, page, uiContentSecurityPolicy } from '../web/html.js';

/** One `--oidc-allow CLAIM=VALUE` rule; a reviewer is allowed when any rule matches. */
export interface OidcAllowRule {
  /** A claim name, or a dotted path into nested claims (`realm_access.roles`); `email_domain` is special. */
  claim: string;
  value: string;
}

export interface OidcOptions {
  /** The provider's issuer URL (its discovery document is at ISSUER/.well-known/openid-configuration). */
  issuer: string;
  clientId: string;
  /** The client secret (from a file or the environment; never a command-line flag). */
  clientSecret: string;
  /** At least one rule: a reviewer is allowed when any matches. */
  allow: OidcAllowRule[];
  /** Scopes asked for. Default `openid profile email`. */
  scopes?: string[];
}

/** The path the provider sends the reviewer back to: register PUBLIC_URL + this as the redirect URI. */
export const oidcCallbackPath = '/signin/oidc/callback';
const flowCookie = 'pcs_oidc';
/** A sign-in started at the provider must come back within this many seconds. */
const flowSeconds = 600;
const claimName = /^[A-Za-z0-9_:.-]{1,100}$/;

/** Parses `--oidc-allow CLAIM=VALUE`; throws a UsageError that says what to write instead. */
export function parseAllowRule(text: string): OidcAllowRule {
  const at = text.indexOf('=');
  const claim = at > 0 ? text.slice(0, at) : '';
  const value = at > 0 ? text.slice(at + 1) : '';
  if (!claimName.test(claim) || value.length === 0 || value.length > 200)
    throw new UsageError(
      `--oidc-allow takes CLAIM=VALUE, e.g. groups=cert-reviewers, roles=Certification.Reviewer or email_domain=vendor.example; got ${JSON.stringify(text.slice(0, 100))}`,
    );
  return { claim, value };
}

/** Which rule allows these claims, or undefined. `email_domain` needs `email_verified: true`. */
export function allowedBy(
  claims: Record<string, unknown>,
  rules: readonly OidcAllowRule[],
): OidcAllowRule | undefined {
  return rules.find((rule) => {
    if (rule.claim === 'email_domain') {
      const email = claims.email;
      return (
        claims.email_verified === true &&
        typeof email === 'string' &&
        email.toLowerCase().endsWith(`@${rule.value.toLowerCase()}`)
      );
    }
    let value: unknown = claims;
    for (const part of rule.claim.split('.'))
      value =
        value && typeof value === 'object' && !Array.isArray(value)
          ? (value as Record<string, unknown>)[part]
          : undefined;
    if (typeof value === 'string') return value === rule.value;
    if (Array.isArray(value)) return value.some((item) => item === rule.value);
    return false;
  });
}

const loopback = (url: URL) => ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);

/** Checks the options the CLI and `startService` take; throws a UsageError saying what to fix. */
export function checkOidcOptions(options: OidcOptions): void {
  let issuer: URL | undefined;
  try {
    issuer = new URL(options.issuer);
  } catch {}
  if (!issuer || !(issuer.protocol === 'https:' || (issuer.protocol === 'http:' && loopback(issuer))))
    throw new UsageError(
      `--oidc-issuer takes the provider's https issuer URL, e.g. https://login.example.com/realms/staff (http only on localhost), got ${JSON.stringify(options.issuer.slice(0, 200))}`,
    );
  if (!/^[\x21-\x7e]{1,200}$/.test(options.clientId))
    throw new UsageError(
      '--oidc-client-id takes the client id registered at the provider (1 to 200 characters)',
    );
  if (options.clientSecret.length === 0)
    throw new UsageError(
      'the OIDC client secret is empty: put it in the file of --oidc-client-secret-file or in OIDC_CLIENT_SECRET',
    );
  if (options.allow.length === 0)
    throw new UsageError(
      '--oidc-issuer needs at least one --oidc-allow CLAIM=VALUE (e.g. groups=cert-reviewers): without it anyone with an account at the provider could approve partners',
    );
}

export interface OidcSignIn {
  /** The issuer, as configured. */
  readonly issuer: string;
  /** Fetches the provider's discovery document now (the CLI does at start, to fail early). */
  ready(): Promise<void>;
  /** Adds `GET /signin/oidc` and the callback; `startSession` signs the reviewer in to the UI. */
  mount(
    // biome-ignore lint/suspicious/noExplicitAny: the UI's app carries its own variables
    app: Hono<any>,
    deps: {
      startSession: (c: Context, reviewerId: string) => Promise<void>;
      html: (c: Context, body: string, status?: 200 | 400 | 401 | 403 | 429) => Response | Promise<Response>;
      /** Failed sign-ins limited per address and overall, counted apart from the audit log. */
      signin: SigninGuard;
    },
  ): void;
}

/**
 * Reviewer sign-in through an OpenID Connect provider (openid-client): the authorization code flow with
 * PKCE, state and nonce kept in a short signed cookie, the ID token checked, the UserInfo claims merged,
 * the reviewer allowed by a configured claim. The reviewer's row is keyed by issuer and subject.
 */
export function oidcSignIn(
  options: OidcOptions,
  deps: { db: Database; publicUrl: string; audit: Audit; log?: LogLine },
): OidcSignIn {
  const log = deps.log ?? (() => {});
  checkOidcOptions(options);
  const issuerUrl = new URL(options.issuer);
  const redirectUri = `${deps.publicUrl}${oidcCallbackPath}`;
  const secure = deps.publicUrl.startsWith('https:');
  // The flow cookie is signed with a key derived from the client secret, which every instance shares.
  const cookieKey = createHash('sha256').update(`pcs-oidc-flow\0${options.clientSecret}`).digest('base64url');
  let configuration: Promise<client.Configuration> | undefined;
  const config = () => {
    configuration ??= client
      .discovery(issuerUrl, options.clientId, options.clientSecret, undefined, {
        timeout: 10,
        ...(issuerUrl.protocol === 'http:' && { execute: [client.allowInsecureRequests] }),
      })
      .catch((error: unknown) => {
        configuration = undefined;
        throw new ServiceError(
          'ERR_OIDC_DISCOVERY',
          `cannot read the OpenID provider's discovery document at ${issuerUrl.href.replace(/\/$/, '')}/.well-known/openid-configuration: ${(error as Error).message}; check --oidc-issuer and that the provider is reachable`,
        );
      });
    return configuration;
  };
  /**
   * A refused sign-in: counted with the failed sign-ins (per address and overall, apart from the audit
   * log, so that nobody can flood it with callbacks); one of a person the provider signed in, whom the
   * claims do not allow, is also in the audit log with who they are.
   */
  const refused = async (
    c: Context,
    ui: Parameters<OidcSignIn['mount']>[1],
    status: 400 | 401 | 403,
    reason: string,
    message: string,
    person?: { issuer: string; subject: string; name: string },
  ) => {
    await ui.signin.failed(ui.signin.addressOf(c));
    if (person) await deps.audit('anonymous', 'signin.refused', null, { method: 'oidc', reason, ...person });
    return ui.html(
      c,
      page(
        'Sign-in refused',
        `<p class="error">${h(message)}</p><p><a href="/signin">Back to sign-in</a></p>`,
      ),
      status,
    );
  };

  const flow: Flow = { options, deps, log, config, cookieKey, redirectUri, secure, refused };
  return {
    issuer: options.issuer,
    async ready() {
      await config();
    },
    mount(app, ui) {
      mountStart(app, flow);
      mountCallback(app, ui, flow);
    },
  };
}

/** What the sign-in's two routes share. */
interface Flow {
  options: OidcOptions;
  deps: { db: Database; publicUrl: string; audit: Audit };
  log: LogLine;
  /** The provider's configuration (discovered once, again after a failure). */
  config: () => Promise<client.Configuration>;
  /** Signs the flow cookie. */
  cookieKey: string;
  redirectUri: string;
  secure: boolean;
  refused: (
    c: Context,
    ui: Parameters<OidcSignIn['mount']>[1],
    status: 400 | 401 | 403,
    reason: string,
    message: string,
    person?: { issuer: string; subject: string; name: string },
  ) => Promise<Response>;
}

/** What the flow cookie holds: PKCE's verifier, the state and the nonce. */
type FlowState = { verifier: string; state: string; nonce: string };

/** `GET /signin/oidc`: to the provider, with PKCE, state and nonce kept in the signed flow cookie. */
function mountStart(app: Parameters<OidcSignIn['mount']>[0], flow: Flow): void {
  const { options, config, cookieKey, secure, redirectUri, log } = flow;
  app.get('/signin/oidc', async (c) => {
    let cfg: client.Configuration;
    try {
      cfg = await config();
    } catch (error) {
      log((error as Error).message);
      return c.html(
        page(
          'Sign-in unavailable',
          '<p class="error">The identity provider cannot be reached just now (the details are in the service’s log). Try again in a minute.</p>',
        ),
        503,
        {
          'content-security-policy': uiContentSecurityPolicy,
          'cache-control': 'no-store',
          'retry-after': '30',
        },
      );
    }
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    await setSignedCookie(c, flowCookie, JSON.stringify({ verifier, state, nonce }), cookieKey, {
      httpOnly: true,
      // Lax: the provider sends the browser back here with a top-level GET from its own site.
      sameSite: 'Lax',
      secure,
      path: oidcCallbackPath,
      maxAge: flowSeconds,
    });
    const url = client.buildAuthorizationUrl(cfg, {
      redirect_uri: redirectUri,
      scope: (options.scopes ?? ['openid', 'profile', 'email']).join(' '),
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return c.redirect(url.href, 303);
  });
}

/** The provider's answer: the code exchanged, the ID token checked, the reviewer allowed and signed in. */
function mountCallback(
  app: Parameters<OidcSignIn['mount']>[0],
  ui: Parameters<OidcSignIn['mount']>[1],
  flow: Flow,
): void {
  const { options, deps, config, cookieKey, secure, refused } = flow;
  app.get(oidcCallbackPath, async (c) => {
    const wait = await ui.signin.throttled(ui.signin.addressOf(c));
    if (wait > 0) {
      const answer = await ui.html(
        c,
        page('Sign-in refused', `<p class="error">Too many failed sign-ins: try again in ${wait} s.</p>`),
        429,
      );
      answer.headers.set('retry-after', String(wait));
      return answer;
    }
    const raw = await getSignedCookie(c, cookieKey, flowCookie);
    deleteCookie(c, flowCookie, { path: oidcCallbackPath, secure });
    let nonceState: FlowState | undefined;
    try {
      nonceState = raw ? JSON.parse(raw) : undefined;
    } catch {}
    if (!nonceState)
      return refused(
        c,
        ui,
        400,
        'no-flow',
        'This sign-in was not started here or took longer than 10 minutes. Start again from the sign-in page.',
      );
    const query = new URL(c.req.url).search;
    const providerError = c.req.query('error');
    if (providerError)
      return refused(
        c,
        ui,
        401,
        'provider-error',
        `The identity provider did not sign you in (${providerError.slice(0, 100)}). Start again, or ask your administrator.`,
      );
    const cfg = await config();
    const claims = await claimsOf(flow, cfg, query, nonceState);
    if (!claims)
      return refused(
        c,
        ui,
        401,
        'invalid-response',
        'The answer from the identity provider did not pass the checks (state, nonce, PKCE or token). Start again from the sign-in page.',
      );
    const issuer = cfg.serverMetadata().issuer;
    // The ID token's checks made sure of `sub`; a subject is at most 255 characters (OpenID Connect Core).
    const subject = String(claims.sub).slice(0, 255);
    const name = displayName(claims);
    const rule = allowedBy(claims, options.allow);
    if (!rule)
      return refused(
        c,
        ui,
        403,
        'not-allowed',
        `You signed in at the identity provider as ${name}, but this service allows only ${options.allow.map((r) => `${r.claim}=${r.value}`).join(' or ')}. Ask your administrator for access.`,
        { issuer, subject, name },
      );
    const reviewerId = await reviewerFor(deps.db, issuer, subject, name);
    await ui.startSession(c, reviewerId);
    await deps.audit(`reviewer:${reviewerId}`, 'signin', null, {
      method: 'oidc',
      issuer,
      subject,
      name,
      allowedBy: `${rule.claim}=${rule.value}`,
    });
    // A page, not a redirect: the session cookie is SameSite=Strict, which a browser does not send on a
    // redirect chain that began on the provider's site; a navigation from this page is same-site.
    c.header('refresh', '0;url=/');
    return ui.html(
      c,
      page(
        'Signed in',
        `<p>Signed in as ${h(name)}. <a href="/ui/partners">Continue to the partners</a>.</p>`,
      ),
    );
  });
}

/**
 * The claims of the person the provider signed in (the ID token's, with UserInfo's under them), once the
 * code is exchanged and state, nonce and PKCE checked; undefined when a check failed (logged).
 */
async function claimsOf(
  flow: Flow,
  cfg: client.Configuration,
  query: string,
  state: FlowState,
): Promise<Record<string, unknown> | undefined> {
  try {
    const tokens = await client.authorizationCodeGrant(cfg, new URL(`${flow.redirectUri}${query}`), {
      pkceCodeVerifier: state.verifier,
      expectedState: state.state,
      expectedNonce: state.nonce,
      idTokenExpected: true,
    });
    const idClaims = tokens.claims()!;
    const userinfo = cfg.serverMetadata().userinfo_endpoint
      ? await client.fetchUserInfo(cfg, tokens.access_token, idClaims.sub)
      : {};
    return { ...userinfo, ...idClaims };
  } catch (error) {
    const code = (error as { code?: string }).code ?? 'error';
    // openid-client's own message is generic; the check that failed is in its cause.
    const cause = (error as { cause?: unknown }).cause;
    const why = cause instanceof Error ? `: ${cause.message}` : '';
    flow.log(`OIDC sign-in refused: ${`${code}: ${(error as Error).message}${why}`.slice(0, 300)}`);
    return undefined;
  }
}

function displayName(claims: Record<string, unknown>): string {
  const pick = [claims.name, claims.preferred_username, claims.email, claims.sub].find(
    (value) => typeof value === 'string' && value.trim() !== '',
  ) as string;
  return (
    pick
      // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are dropped from names
      .replace(/[\u0000-\u001f\u007f]/g, '')
      .trim()
      .slice(0, 100) || 'unnamed'
  );
}

/**
 * The reviewer row of this issuer and subject, created on the first sign-in, its name kept current. Its
 * id is derived from issuer and subject; its credential hash is a marker no local credential hashes to.
 */
async function reviewerFor(db: Database, issuer: string, subject: string, name: string): Promise<string> {
  const digest = createHash('sha256').update(`${issuer}\0${subject}`).digest('base64url');
  const id = `rev_oidc_${digest.slice(0, 22)}`;
  const [row] = await db.query<{ inserted: boolean }>(
    `INSERT INTO reviewers (id, name, credential_hash) VALUES ($1, $2, $3)
     ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name RETURNING (xmax = 0) AS inserted`,
    [id, name, `oidc:${digest}`],
  );
  if (row?.inserted)
    await writeAudit(db, {
      actor: 'oidc',
      action: 'reviewer.added',
      subject: id,
      detail: { name, issuer, subject },
    });
  return id;
}
