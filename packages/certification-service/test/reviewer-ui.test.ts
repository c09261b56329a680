import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../../test-support/chromium.js';
import { makePlan } from '../src/index.js';
import { attestedRun, type InProcessService, inProcessService } from './support/in-process.js';
import { api, type CreatedRun, journeyRun } from './support/service.js';

let browser: Browser;
let svc: InProcessService;
let partner: { partnerId: string; apiKey: string };
let reviewer: { reviewerId: string; credential: string };
let passing: CreatedRun;
let uncertified: CreatedRun;
const hostileName = 'Acme <img src=x onerror=alert(1)> "Lending"';

beforeAll(async () => {
  browser = await launchChromium(chromium);
  // The operator's plan, relaxed: the two operations the reference client completes when no grant is
  // narrowed (its one loan draft meets the 503 of the unavailable scenario, and it never replays a create).
  svc = await inProcessService({
    plan: makePlan({
      id: 'two-ops',
      operations: ['listLoans', 'createRepayment'],
      scenarios: ['revocation', 'throttle', 'unavailable'],
      ttlSeconds: 2,
    }),
  });
  partner = await svc.partner(hostileName);
  reviewer = await svc.reviewer('Rita Reviewer');
  const url = svc.service.url;
  // A correct journey (the conformance suite's reference client), judged under --certify rules.
  const { run, judged } = await journeyRun(url, partner.apiKey, {
    certify: true,
    integration: { name: '<b>bold</b>' },
  });
  passing = run;
  expect(
    judged.verdict,
    JSON.stringify(judged.report.checks.filter((c: { status: string }) => c.status === 'failed')),
  ).toBe('PASS');
  // A run not judged under --certify (and empty): it cannot be approved.
  uncertified = (await api(url, partner.apiKey, 'POST', '/api/runs', {})).json();
  await api(url, partner.apiKey, 'POST', `/api/runs/${uncertified.id}/finish`, {});
});
afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

async function signedInPage(): Promise<Page> {
  const page = await browser.newPage();
  page.on('dialog', () => {
    throw new Error('a script ran in the reviewer UI');
  });
  await page.goto(`${svc.service.url}/`);
  expect(new URL(page.url()).pathname).toBe('/signin');
  await page.fill('#credential', reviewer.credential);
  await page.click('button');
  return page;
}

describe('the reviewer UI in Chromium', () => {
  it('signs in, shows the partner (escaped) with its latest attested run, refuses a bad credential', async () => {
    const wrong = await browser.newPage();
    await wrong.goto(`${svc.service.url}/signin`);
    await wrong.fill('#credential', 'pcs_reviewer_not-a-credential');
    const refused = await Promise.all([
      wrong.waitForResponse((r) => r.url().endsWith('/signin') && r.request().method() === 'POST'),
      wrong.click('button'),
    ]);
    expect(refused[0].status()).toBe(401);
    expect(await wrong.textContent('body')).toContain('That credential is not valid.');
    await wrong.close();

    const page = await signedInPage();
    expect(new URL(page.url()).pathname).toBe('/ui/partners');
    const row = page.locator('tr', { hasText: 'Acme' });
    expect(await row.textContent()).toContain(hostileName);
    expect(await row.textContent()).toContain('PASS');
    expect(await row.textContent()).toContain('undecided');
    expect(await page.locator('img').count()).toBe(0);
    const cookies = await page.context().cookies();
    const session = cookies.find((cookie) => cookie.name === 'pcs_session')!;
    expect(session.httpOnly).toBe(true);
    expect(session.sameSite).toBe('Strict');
    await page.close();
  });

  it('a run that is not approvable offers no approval, and a forged approval is refused', async () => {
    const page = await signedInPage();
    const response = await page.goto(`${svc.service.url}/ui/runs/${uncertified.id}`);
    expect(response!.headers()['content-security-policy']).toContain("default-src 'none'");
    expect(await page.locator('button[value=approved]').count()).toBe(0);
    expect(await page.textContent('#kind')).toContain('practice run');
    expect(await page.textContent('#approvable')).toContain('practice run');
    // The form posted by hand, CSRF token included: still refused, and audited.
    const csrf = await page.locator('input[name=csrf]').first().getAttribute('value');
    const forged = await page.request.post(`${svc.service.url}/ui/runs/${uncertified.id}/decision`, {
      headers: { origin: svc.service.url },
      form: { csrf: csrf!, decision: 'approved', note: 'ship it' },
      maxRedirects: 0,
    });
    expect(forged.status()).toBe(409);
    expect(await forged.text()).toContain('cannot be approved');
    expect(await forged.text()).toContain('practice run');
    expect((await svc.db.query('SELECT id FROM decisions')).length).toBe(0);
    expect((await svc.db.query("SELECT id FROM audit_log WHERE action = 'decision.refused'")).length).toBe(1);
    await page.close();
  });

  it('approves on the attested passing run with a note: recorded with who, when and which run, and in the audit log', async () => {
    const page = await signedInPage();
    await page.goto(`${svc.service.url}/ui/runs/${passing.id}`);
    // The report opens under its own CSP; hostile text in it is text.
    const [report] = await Promise.all([page.waitForNavigation(), page.click('text=Open the report')]);
    expect(report!.headers()['content-security-policy']).toContain("default-src 'none'");
    expect(await page.textContent('body')).toContain('<b>bold</b>');
    expect(await page.locator('b', { hasText: 'bold' }).count()).toBe(0);
    await page.goBack();
    // The page decides alone: plan, coverage, the signature checked against the JWKS, approvable.
    expect(await page.textContent('#plan')).toContain('two-ops');
    expect(await page.textContent('#operations')).toContain('createLoanDraft');
    expect(await page.textContent('#scenarios')).toContain('revocation');
    expect(await page.textContent('#must-not-verified')).toContain('none');
    expect(await page.textContent('#signature')).toMatch(/verified against this service’s JWKS, key \S+/);
    expect(await page.textContent('#approvable')).toContain('yes');
    await page.fill('#note', 'Reviewed the attested run; token reuse and Retry-After handled.');
    await Promise.all([page.waitForURL(/\/partners\//), page.click('button[value=approved]')]);
    const decisions = await page.locator('table').first().textContent();
    expect(decisions).toContain('approved');
    expect(decisions).toContain('Rita Reviewer');
    expect(decisions).toContain(passing.id);
    const [row] = await svc.db.query<{ decision: string; run_id: string; reviewer_id: string }>(
      'SELECT decision, run_id, reviewer_id FROM decisions',
    );
    expect(row).toEqual({ decision: 'approved', run_id: passing.id, reviewer_id: reviewer.reviewerId });
    // The same decision again on the run: the page offers none while the approval rests on it, and
    // the form posted by hand (the session's CSRF token included) is refused, said so, logged.
    await page.goto(`${svc.service.url}/ui/runs/${passing.id}`);
    expect(await page.locator('button[value=approved]').count()).toBe(0);
    await page.goto(`${svc.service.url}/ui/partners`);
    const csrf = await page.locator('input[name=csrf]').first().getAttribute('value');
    const second = await page.request.post(`${svc.service.url}/ui/runs/${passing.id}/decision`, {
      headers: { origin: svc.service.url },
      form: { csrf: csrf!, decision: 'approved', note: 'approving twice' },
      maxRedirects: 0,
    });
    expect(second.status()).toBe(409);
    expect(await second.text()).toContain('already approved');
    expect((await svc.db.query('SELECT id FROM decisions')).length).toBe(1);
    await page.goto(`${svc.service.url}/ui/audit`);
    const audit = await page.textContent('main');
    expect(audit).toContain('partner.approved');
    expect(audit).toContain('Rita Reviewer');
    expect(audit).toContain('run.finished');
    expect(audit).toMatch(/verdict\s*PASS/); // the run.finished line's detail, shown as fields
    await page.goto(`${svc.service.url}/`);
    const partnerRow = await page.locator('tr', { hasText: 'Acme' }).textContent();
    expect(partnerRow).toContain('approved');
    expect(partnerRow).toContain(`on run ${passing.id}`);
    // Signed out: the UI is closed again.
    await Promise.all([page.waitForURL(/\/signin$/), page.click('header button')]);
    await page.goto(`${svc.service.url}/`);
    expect(new URL(page.url()).pathname).toBe('/signin');
    await page.close();
  });

  it('refuses a decision without the CSRF token or from another origin, even with the session cookie', async () => {
    const page = await signedInPage();
    const cookie = (await page.context().cookies()).find((item) => item.name === 'pcs_session')!;
    await page.close();
    // A judged, attested run the standing approval does not rest on (rejecting that one is refused).
    const other = await attestedRun(svc.db, partner.partnerId);
    const url = `${svc.service.url}/ui/runs/${other}/decision`;
    const post = (headers: Record<string, string>, body: Record<string, string>) =>
      fetch(url, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          cookie: `pcs_session=${cookie.value}`,
          'content-type': 'application/x-www-form-urlencoded',
          ...headers,
        },
        body: new URLSearchParams(body),
      });
    const before = (await svc.db.query('SELECT id FROM decisions')).length;
    expect((await post({ origin: svc.service.url }, { decision: 'rejected', note: 'x' })).status).toBe(403);
    // The token a page of this session carries (the database keeps none: it is derived from the cookie).
    const home = await (
      await fetch(`${svc.service.url}/ui/partners`, { headers: { cookie: `pcs_session=${cookie.value}` } })
    ).text();
    const session = { csrf_token: /name="csrf" value="([^"]+)"/.exec(home)![1]! };
    expect(
      (
        await post(
          { origin: 'https://evil.example' },
          { csrf: session.csrf_token, decision: 'rejected', note: 'x' },
        )
      ).status,
    ).toBe(403);
    // The control: this origin and the token → recorded.
    expect(
      (
        await post(
          { origin: svc.service.url },
          { csrf: session.csrf_token, decision: 'rejected', note: 'regression found' },
        )
      ).status,
    ).toBe(303);
    expect((await svc.db.query('SELECT id FROM decisions')).length).toBe(before + 1);
  });
});
