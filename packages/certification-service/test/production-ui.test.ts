import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../../test-support/chromium.js';
import { recordSignedDecision } from '../src/production/decisions/signed.js';
import { attestedRun, type InProcessService, inProcessService } from './support/in-process.js';
import { reviewerForms } from './support/reviewer-forms.js';

// The reviewer pages of the production flow in Chromium: the "expires within N days" hint on a
// partner's production page (shown for an approval ending within --expiry-notice-days, not for one far
// from its end, and not for the same approval under a shorter notice), the partner's API saying the
// same (`production.expiring`), and the notes of decisions and revocations: control characters refused
// with a page saying what and where (and an RFC 9457 problem to a script that asks for one), a line
// break kept and shown as text, markup shown as text.

const noticeDays = 30;

let browser: Browser;
let svc: InProcessService;
let soon: { partnerId: string; apiKey: string };
let far: { partnerId: string; apiKey: string };
let credential: string;
let soonRun: string;

beforeAll(async () => {
  browser = await launchChromium(chromium);
  svc = await inProcessService({ sweepIntervalMs: 60_000, production: { expiryNoticeDays: noticeDays } });
  soon = await svc.partner('Soon Lending');
  far = await svc.partner('Far Lending');
  const reviewer = await svc.reviewer('Rita Reviewer');
  credential = reviewer.credential;
  // Two approvals: one ending in 10 days (within the 30-day notice), one in 200 days.
  const deps = svc.service.production;
  soonRun = await attestedRun(svc.db, soon.partnerId);
  for (const [partner, runId, days] of [
    [soon, soonRun, 10],
    [far, await attestedRun(svc.db, far.partnerId), 200],
  ] as const)
    await svc.db.transaction((tx) =>
      recordSignedDecision(
        tx,
        {
          partnerId: partner.partnerId,
          runId,
          reviewerId: reviewer.reviewerId,
          decision: 'approved',
          note: 'every check passed',
          scopes: ['read:loans'],
          validUntil: new Date(Date.now() + days * 86_400_000),
        },
        deps,
      ),
    );
});
afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

async function signedIn(url = svc.service.url): Promise<Page> {
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  await page.goto(`${url}/signin`);
  await page.fill('#credential', credential);
  await Promise.all([page.waitForURL(`${url}/ui/partners`), page.click('button')]);
  return page;
}

const standing = async (page: Page) => (await page.textContent('main'))!.replace(/\s+/g, ' ');
const hint = `expires within ${noticeDays} days: a new certification run replaces it`;

describe('the approval-expiring hint', () => {
  it('is shown on the production page of a partner whose approval ends within the notice', async () => {
    const page = await signedIn();
    await page.goto(`${svc.service.url}/ui/partners/${soon.partnerId}/production`);
    expect(await standing(page)).toContain('Production: active');
    expect(await page.locator('span.error', { hasText: hint }).count()).toBe(1);
    await page.close();
    // The partner sees it through the API too.
    const listed = await fetch(`${svc.service.url}/api/decisions`, {
      headers: { authorization: `Bearer ${soon.apiKey}` },
    });
    expect(((await listed.json()) as { production: { expiring: boolean } }).production.expiring).toBe(true);
  });

  it('is not shown for an approval far from its end (the control), nor in its partner’s API', async () => {
    const page = await signedIn();
    await page.goto(`${svc.service.url}/ui/partners/${far.partnerId}/production`);
    const text = await standing(page);
    expect(text).toContain('Production: active');
    expect(text).not.toContain('expires within');
    await page.close();
    const listed = await fetch(`${svc.service.url}/api/decisions`, {
      headers: { authorization: `Bearer ${far.apiKey}` },
    });
    expect(((await listed.json()) as { production: { expiring: boolean } }).production.expiring).toBe(false);
  });

  it('follows --expiry-notice-days: the same 10-day approval under a 5-day notice shows no hint', async () => {
    const short = await inProcessService({
      db: svc.db,
      signingKey: svc.service.production.key,
      sweepIntervalMs: 60_000,
      production: { expiryNoticeDays: 5 },
    });
    try {
      const page = await signedIn(short.service.url);
      await page.goto(`${short.service.url}/ui/partners/${soon.partnerId}/production`);
      const text = await standing(page);
      expect(text).toContain('Production: active');
      expect(text).not.toContain('expires within');
      await page.close();
    } finally {
      await short.close();
    }
  });
});

describe('notes of decisions and revocations', () => {
  it('refuses a control character in a revocation note, saying which and where, and revokes nothing', async () => {
    const page = await signedIn();
    await page.goto(`${svc.service.url}/ui/partners/${far.partnerId}/production`);
    // A paste from a terminal: an escape sequence inside the note.
    await page.locator('#note').evaluate((area: HTMLTextAreaElement) => {
      area.value = 'leaked \u001b[31mkey';
    });
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.click('button[value=revoked]'),
    ]);
    expect(answer.status()).toBe(400);
    const error = (await page.textContent('p.error'))!;
    expect(error).toContain('control character (U+001B) at character 8');
    expect(error).toContain('line breaks and tabs are kept');
    await page.goto(`${svc.service.url}/ui/partners/${far.partnerId}/production`);
    expect(await standing(page)).toContain('Production: active');
    await page.close();
  });

  it('answers a script that asks for JSON with an RFC 9457 problem, for approve and revoke alike', async () => {
    const forms = await reviewerForms(svc.service.url, credential);
    for (const [page, action, fields] of [
      [`/ui/runs/${soonRun}`, `/ui/runs/${soonRun}/decision`, { decision: 'approved', note: 'ok\u0000' }],
      [
        `/ui/partners/${far.partnerId}/production`,
        `/ui/partners/${far.partnerId}/revoke`,
        { decision: 'revoked', note: `bell\u0007` },
      ],
    ] as const) {
      const answer = await forms.post(page, action, fields, { accept: 'application/problem+json' });
      expect(answer.status, action).toBe(400);
      expect(answer.contentType).toBe('application/problem+json');
      const body = JSON.parse(answer.text) as { status: number; detail: string };
      expect(body.status).toBe(400);
      expect(body.detail).toMatch(
        /^The note has a control character \(U\+000[07]\) at character \d+: a note is 1 to 2000 characters/,
      );
    }
    // Too long, or empty: refused too; the decision list is unchanged.
    for (const note of ['x'.repeat(2001), '   ']) {
      const answer = await forms.post(
        `/ui/partners/${far.partnerId}/production`,
        `/ui/partners/${far.partnerId}/revoke`,
        { decision: 'revoked', note },
        { accept: 'application/problem+json' },
      );
      expect(answer.status).toBe(400);
    }
    const listed = await fetch(`${svc.service.url}/api/decisions`, {
      headers: { authorization: `Bearer ${far.apiKey}` },
    });
    expect(((await listed.json()) as { decisions: unknown[] }).decisions).toHaveLength(1);
  });

  it('takes a note with a line break and markup (the positive), shown as text', async () => {
    const page = await signedIn();
    await page.goto(`${svc.service.url}/ui/partners/${far.partnerId}/production`);
    await page.fill('#note', 'key leaked <b>twice</b>\nsee ticket 42');
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.click('button[value=revoked]'),
    ]);
    expect(answer.status()).toBe(303);
    await page.waitForLoadState();
    expect(await standing(page)).toContain('Production: revoked');
    expect(await page.locator('td', { hasText: 'key leaked <b>twice</b>' }).count()).toBe(1);
    expect(await page.locator('td b').count()).toBe(0);
    await page.close();
    const listed = (await (
      await fetch(`${svc.service.url}/api/decisions`, { headers: { authorization: `Bearer ${far.apiKey}` } })
    ).json()) as { decisions: Array<{ decision: string; note: string }> };
    expect(listed.decisions[0]).toMatchObject({
      decision: 'revoked',
      note: 'key leaked <b>twice</b>\nsee ticket 42',
    });
  });
});

describe('the reviewer UI as one site', () => {
  it('links every page from the header, and no page overflows a 1280-px window, long content included', async () => {
    // Long unbroken content where pages show it: a webhook address, an audit detail, a note.
    const long = `https://hooks.partner-lending.example/${'receiver-path-segment-'.repeat(12)}end`;
    await svc.db.query(
      "INSERT INTO webhooks (id, url, events, secret_sealed) VALUES ('whk_long', $1, '[\"partner.approved\"]', 'v1.x.y.z')",
      [long],
    );
    await svc.db.query(
      "INSERT INTO audit_log (actor, action, subject, detail) VALUES ('admin', 'webhook.added', 'whk_long', $1)",
      [JSON.stringify({ url: long, events: ['partner.approved'], note: 'x'.repeat(400) })],
    );
    const page = await signedIn();
    await page.setViewportSize({ width: 1280, height: 800 });
    const pages = [
      '/ui/partners',
      `/ui/partners/${soon.partnerId}`,
      `/ui/runs/${soonRun}`,
      `/ui/partners/${soon.partnerId}/production`,
      '/ui/webhooks',
      '/ui/audit',
    ];
    const seen: Record<string, { width: number; links: string[] }> = {};
    for (const path of pages) {
      const answer = await page.goto(`${svc.service.url}${path}`);
      expect(answer?.status(), path).toBe(200);
      seen[path] = await page.evaluate(() => ({
        width: document.documentElement.scrollWidth,
        links: [...document.querySelectorAll('header a')].map((a) => a.getAttribute('href') ?? ''),
      }));
    }
    for (const path of pages) {
      expect(seen[path]!.width, path).toBeLessThanOrEqual(1280);
      expect(seen[path]!.links, path).toEqual(['/ui/partners', '/ui/webhooks', '/ui/audit']);
    }
    // Not vacuous: the long address is on the webhooks page, and the audit detail is shown as fields.
    await page.goto(`${svc.service.url}/ui/webhooks`);
    expect(await page.textContent('main')).toContain('receiver-path-segment-receiver');
    await page.goto(`${svc.service.url}/ui/audit`);
    expect(await page.locator('dl.fields dt', { hasText: 'url' }).count()).toBeGreaterThan(0);
    // And a page that would overflow does: the measure can fail.
    await page.evaluate(() => {
      const wide = document.createElement('div');
      wide.style.width = '2000px';
      wide.textContent = 'wide';
      document.body.append(wide);
    });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeGreaterThan(1280);
    await page.close();
  });
});
