import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import Provider from 'oidc-provider';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../../test-support/chromium.js';
import { makePlan } from '../src/index.js';
import { type InProcessService, inProcessService } from './support/in-process.js';
import { type CreatedRun, journeyRun } from './support/service.js';

// A real OpenID provider (oidc-provider) on 127.0.0.1, reached by the browser as `localhost` so that it
// is another site than the service at 127.0.0.1 (as a company's provider is): the SameSite rules apply.
// Its interaction signs in whichever test account `signInAs` names, without a form.

const clientId = 'certification-service';
const clientSecret = 'test-client-secret-0123456789abcdef';

const accounts: Record<string, Record<string, unknown>> = {
  // In the reviewers' group.
  'alice-sub': {
    name: 'Alice Approver',
    email: 'alice@staff.example',
    email_verified: true,
    groups: ['staff', 'cert-reviewers'],
  },
  // Not in the group; a verified address at the allowed domain.
  'bob-sub': { name: 'Bob Domain', email: 'bob@vendor.example', email_verified: true, groups: ['staff'] },
  // Not in the group; an address at the allowed domain that the provider has NOT verified.
  'mallory-sub': {
    name: 'Mallory Outsider',
    email: 'mallory@vendor.example',
    email_verified: false,
    groups: ['staff'],
  },
};
let signInAs = 'alice-sub';

let browser: Browser;
let idp: Server;
let issuer: string;
let svc: InProcessService;
let passing: CreatedRun;

async function startProvider(redirectUri: string): Promise<void> {
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [redirectUri],
        response_types: ['code'],
        grant_types: ['authorization_code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    findAccount: (_ctx: unknown, id: string) =>
      accounts[id] && { accountId: id, claims: () => ({ sub: id, ...accounts[id] }) },
    claims: { openid: ['sub'], profile: ['name', 'groups'], email: ['email', 'email_verified'] },
    features: { devInteractions: { enabled: false } },
    cookies: { keys: ['oidc-test-cookie-key'] },
  });
  const callback = provider.callback();
  idp.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (!req.url?.startsWith('/interaction/')) return callback(req, res);
    void (async () => {
      const details = await provider.interactionDetails(req, res);
      if (details.prompt.name === 'login')
        return provider.interactionFinished(
          req,
          res,
          { login: { accountId: signInAs } },
          { mergeWithLastSubmission: false },
        );
      const grant = details.grantId
        ? await provider.Grant.find(details.grantId)
        : new provider.Grant({
            accountId: details.session!.accountId,
            clientId: String(details.params.client_id),
          });
      const missing = details.prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[] };
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
      if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
      return provider.interactionFinished(
        req,
        res,
        { consent: { grantId: await grant.save() } },
        { mergeWithLastSubmission: true },
      );
    })().catch((error: unknown) => {
      res.writeHead(500).end(String((error as Error).message));
    });
  });
}

beforeAll(async () => {
  browser = await launchChromium(chromium);
  idp = createServer();
  await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve));
  issuer = `http://localhost:${(idp.address() as { port: number }).port}`;
  svc = await inProcessService({
    // The vendor's plan with 2-s tokens: the journey renews within its 9 s.
    plan: makePlan({ id: 'oidc-test-plan', ttlSeconds: 2 }),
    oidc: {
      issuer,
      clientId,
      clientSecret,
      allow: [
        { claim: 'groups', value: 'cert-reviewers' },
        { claim: 'email_domain', value: 'vendor.example' },
      ],
    },
  });
  await startProvider(`${svc.service.url}/signin/oidc/callback`);
  // A passing run judged under --certify rules, for the reviewer to approve.
  const partner = await svc.partner('Acme Lending');
  const url = svc.service.url;
  const { run, judged } = await journeyRun(url, partner.apiKey);
  passing = run;
  expect(judged.verdict).toBe('PASS');
});
afterAll(async () => {
  await browser?.close();
  await svc?.close();
  idp?.closeAllConnections();
  await new Promise((resolve) => idp?.close(resolve));
});

/**
 * A fresh browser (no provider session) that follows the sign-in link as `account`. `alter` may change
 * the service's answer to `GET /signin/oidc` (its redirect to the provider and its flow cookie) on the
 * way to the browser: the only request of the chain a route can intercept (the rest are redirects).
 */
async function signIn(account: string, alter?: (headers: Record<string, string>) => void) {
  signInAs = account;
  const context = await browser.newContext();
  const page = await context.newPage();
  page.on('dialog', () => {
    throw new Error('a script ran in the reviewer UI');
  });
  let altered = 0;
  if (alter)
    await page.route(
      (url) => url.pathname === '/signin/oidc',
      async (route) => {
        const response = await route.fetch({ maxRedirects: 0 });
        const headers = response.headers();
        alter(headers);
        altered += 1;
        return route.fulfill({ status: response.status(), headers, body: await response.body() });
      },
    );
  await page.goto(`${svc.service.url}/`);
  expect(new URL(page.url()).pathname).toBe('/signin');
  const [callback] = await Promise.all([
    page.waitForResponse((r) => new URL(r.url()).pathname === '/signin/oidc/callback', { timeout: 60_000 }),
    page.click('#oidc-signin'),
  ]);
  await page.waitForLoadState('load');
  // The control: the answer was really altered.
  if (alter) expect(altered).toBe(1);
  return { page, context, callback };
}

const refusedSignins = async () =>
  Number(
    (
      await svc.db.query<{ n: string | null }>(
        "SELECT sum(count) AS n FROM security_events WHERE kind = 'signin.refused'",
      )
    )[0]?.n ?? 0,
  );

const sessionsOf = async (reviewerId: string) =>
  (await svc.db.query('SELECT 1 FROM reviewer_sessions WHERE reviewer_id = $1', [reviewerId])).length;

describe('reviewer sign-in through an OpenID provider, in Chromium', () => {
  it('an allowed reviewer signs in, approves, is named in the audit log, and signs out', async () => {
    const { page, context, callback } = await signIn('alice-sub');
    expect(callback.status()).toBe(200);
    // Followed on to the partners (the session cookie is SameSite=Strict, sent after the same-site hop).
    await page.waitForURL(`${svc.service.url}/ui/partners`);
    expect(await page.textContent('header')).toContain('Alice Approver');
    const [reviewer] = await svc.db.query<{ id: string; name: string }>(
      "SELECT id, name FROM reviewers WHERE id LIKE 'rev_oidc_%'",
    );
    expect(reviewer!.name).toBe('Alice Approver');
    await page.goto(`${svc.service.url}/ui/runs/${passing.id}`);
    await page.fill('#note', 'Reviewed through the company sign-in.');
    await Promise.all([page.waitForURL(/\/partners\//), page.click('button[value=approved]')]);
    expect(await page.locator('table').first().textContent()).toContain('Alice Approver');
    const [decision] = await svc.db.query<{ reviewer_id: string }>('SELECT reviewer_id FROM decisions');
    expect(decision!.reviewer_id).toBe(reviewer!.id);
    // The audit log: who signed in (name, subject, issuer, the rule), and who approved.
    const audit = await svc.db.query<{ actor: string; action: string; detail: Record<string, unknown> }>(
      'SELECT actor, action, detail FROM audit_log ORDER BY id',
    );
    expect(audit.find((e) => e.action === 'signin')).toEqual({
      actor: `reviewer:${reviewer!.id}`,
      action: 'signin',
      detail: {
        method: 'oidc',
        issuer,
        subject: 'alice-sub',
        name: 'Alice Approver',
        allowedBy: 'groups=cert-reviewers',
      },
    });
    expect(audit.find((e) => e.action === 'partner.approved')).toMatchObject({
      actor: `reviewer:${reviewer!.id}`,
      detail: { run: passing.id, reviewer: 'Alice Approver' },
    });
    await page.goto(`${svc.service.url}/audit`);
    expect(await page.textContent('main')).toContain('alice-sub');
    // A second sign-in reuses the row of this issuer and subject.
    const again = await signIn('alice-sub');
    await again.page.waitForURL(`${svc.service.url}/ui/partners`);
    expect((await svc.db.query("SELECT id FROM reviewers WHERE id LIKE 'rev_oidc_%'")).length).toBe(1);
    await again.context.close();
    // Sign out: the session is gone and the UI closed again.
    const before = await sessionsOf(reviewer!.id);
    await page.goto(`${svc.service.url}/`);
    await Promise.all([page.waitForURL(/\/signin$/), page.click('header button')]);
    expect(await sessionsOf(reviewer!.id)).toBe(before - 1);
    await page.goto(`${svc.service.url}/`);
    expect(new URL(page.url()).pathname).toBe('/signin');
    await context.close();
  });

  it('a verified address at the allowed domain is allowed; an unverified one and no group are refused', async () => {
    const bob = await signIn('bob-sub');
    expect(bob.callback.status()).toBe(200);
    await bob.page.waitForURL(`${svc.service.url}/ui/partners`);
    expect(await bob.page.textContent('header')).toContain('Bob Domain');
    await bob.context.close();

    const before = (await svc.db.query('SELECT 1 FROM reviewer_sessions')).length;
    const mallory = await signIn('mallory-sub');
    expect(mallory.callback.status()).toBe(403);
    expect(await mallory.page.textContent('main')).toContain('allows only groups=cert-reviewers');
    expect(new URL(mallory.page.url()).pathname).toBe('/signin/oidc/callback');
    expect((await svc.db.query('SELECT 1 FROM reviewer_sessions')).length).toBe(before);
    expect((await mallory.context.cookies()).some((c) => c.name === 'pcs_session')).toBe(false);
    await mallory.page.goto(`${svc.service.url}/`);
    expect(new URL(mallory.page.url()).pathname).toBe('/signin');
    const [refusal] = await svc.db.query<{ detail: Record<string, unknown> }>(
      "SELECT detail FROM audit_log WHERE action = 'signin.refused' ORDER BY id DESC LIMIT 1",
    );
    expect(refusal!.detail).toEqual({
      method: 'oidc',
      reason: 'not-allowed',
      issuer,
      subject: 'mallory-sub',
      name: 'Mallory Outsider',
    });
    expect((await svc.db.query("SELECT 1 FROM reviewers WHERE name = 'Mallory Outsider'")).length).toBe(0);
    await mallory.context.close();
  });

  it('refuses a tampered state, a callback it did not start, and local credentials', async () => {
    // The control: the same interception, the answer passed on unchanged, signs in.
    const unchanged = await signIn('alice-sub', () => {});
    expect(unchanged.callback.status()).toBe(200);
    await unchanged.page.waitForURL(`${svc.service.url}/ui/partners`);
    await unchanged.context.close();
    const before = (await svc.db.query('SELECT 1 FROM reviewer_sessions')).length;
    const audited = (await svc.db.query('SELECT 1 FROM audit_log')).length;
    const tampered = await signIn('alice-sub', (headers) => {
      const location = new URL(headers.location!);
      expect(location.searchParams.get('state')).toMatch(/^[\w-]{20,}$/);
      location.searchParams.set('state', 'forged-state');
      headers.location = location.href;
    });
    expect(tampered.callback.status()).toBe(401);
    expect(await tampered.page.textContent('main')).toContain('did not pass the checks');
    expect((await svc.db.query('SELECT 1 FROM reviewer_sessions')).length).toBe(before);
    // Counted with the failed sign-ins (which nobody can flood the audit log with), the cause logged.
    expect(await refusedSignins()).toBeGreaterThan(0);
    expect((await svc.db.query('SELECT 1 FROM audit_log')).length).toBe(audited);
    expect(svc.lines.find((line) => line.startsWith('OIDC sign-in refused'))).toMatch(/state/);
    await tampered.context.close();

    // A callback with a code but without this browser's flow cookie.
    const refusedBefore = await refusedSignins();
    const stray = await fetch(`${svc.service.url}/signin/oidc/callback?code=abc&state=xyz`, {
      redirect: 'manual',
    });
    expect(stray.status).toBe(400);
    expect(await refusedSignins()).toBe(refusedBefore + 1);
    expect(stray.headers.get('set-cookie') ?? '').not.toContain('pcs_session=');

    // With OIDC on, a local credential no longer signs in.
    const local = await svc.reviewer('Local Larry');
    const form = await fetch(`${svc.service.url}/signin`, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: svc.service.url, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ credential: local.credential }),
    });
    expect(form.status).toBe(403);
    expect(await sessionsOf(local.reviewerId)).toBe(0);
  });
});

describe('the flow cookie', () => {
  it('is refused when its signature does not match', async () => {
    const altered = await signIn('alice-sub', (headers) => {
      const cookie = headers['set-cookie']!;
      expect(cookie).toMatch(/^pcs_oidc=[^;]+\./);
      // The cookie's value changed by one character: its signature no longer matches.
      headers['set-cookie'] = cookie.replace(/^pcs_oidc=(%7B|.)/, (_, first) =>
        first === 'x' ? 'pcs_oidc=y' : 'pcs_oidc=x',
      );
    });
    expect(altered.callback.status()).toBe(400);
    expect(await altered.page.textContent('main')).toContain('was not started here');
    expect((await altered.context.cookies()).some((c) => c.name === 'pcs_session')).toBe(false);
    await altered.context.close();
  });
});
