import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../../../../test-support/chromium.js';
import { formatClientHtmlReport, judgeSession, runConformanceDetailed } from '../../../src/index.js';
import { formatHtmlReport } from '../../../src/reporters/html/server.js';
import { loans, sessionOf, tokenRequest } from '../../client/support/session.js';
import { sharedSigningKey } from '../../helpers.js';

// The HTML reports in Debian's Chromium: they load nothing from elsewhere, fit a 375-px phone screen,
// and print with every evidence section open.
const out = fileURLToPath(new URL('../../../test-results/', import.meta.url));
let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium(chromium);
  await mkdir(out, { recursive: true });
});
afterAll(() => browser?.close());

async function reports(): Promise<Array<[string, string]>> {
  const { report, target } = await runConformanceDetailed({
    mock: { faults: ['api-accept-query-token', 'token-omit-no-store'], signingKey: await sharedSigningKey() },
  });
  const session = sessionOf(
    [tokenRequest(0, 'T1'), loans(10, 'T1'), loans(20, 'T1', 200, { target: '/v3/partner/another/loans' })],
    [{ ref: 'T1', issuedAt: 5, expAt: 4000 }],
  );
  return [
    ['server', formatHtmlReport(report, target)],
    ['client', formatClientHtmlReport(judgeSession(session), session)],
  ];
}

describe('HTML reports in Chromium', () => {
  it('fit a 375-px screen, load nothing from elsewhere, and print with the evidence open', async () => {
    for (const [name, html] of await reports()) {
      const file = join(out, `report-${name}.html`);
      await writeFile(file, html);
      const context = await browser.newContext({ viewport: { width: 375, height: 800 } });
      const outside: string[] = [];
      await context.route('**/*', (route) => {
        const url = route.request().url();
        if (url.startsWith('file:')) return route.continue();
        outside.push(url);
        return route.abort('blockedbyclient');
      });
      const page = await context.newPage();
      await page.goto(pathToFileURL(file).href);
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      expect(width, `${name} report is ${width}px wide on a 375-px screen`).toBeLessThanOrEqual(375);
      await page.screenshot({ path: join(out, `report-${name}-375.png`), fullPage: false });
      expect(await page.locator('details').count(), name).toBeGreaterThan(0);
      const hiddenOnScreen = await page.locator('details pre.exchange').first().isVisible();
      expect(hiddenOnScreen, `${name}: evidence is folded on screen`).toBe(false);
      await page.emulateMedia({ media: 'print' });
      expect(
        await page.locator('details pre.exchange').first().isVisible(),
        `${name}: evidence shows in print`,
      ).toBe(true);
      const allShown = await page
        .locator('details pre.exchange')
        .evaluateAll((items) => items.every((item) => (item as HTMLElement).offsetHeight > 0));
      expect(allShown, `${name}: every evidence section shows in print`).toBe(true);
      expect(outside, name).toEqual([]);
      await context.close();
    }
  }, 60_000);

  it('timeline: scenario labels never overlap and the axis fits the session, readable at 375 px', async () => {
    // Four scenario steps within 60 ms of each other, and a long-phase token that outlives the session.
    const session = sessionOf(
      [tokenRequest(0, 'T1'), loans(10, 'T1'), loans(5000, 'T1'), loans(9000, 'T1')],
      [{ ref: 'T1', issuedAt: 5, expAt: 3_600_005 }],
    );
    session.durationMs = 9100;
    session.scenarios = (['revocation', 'throttle', 'unavailable', 'narrowed-grant'] as const).map(
      (name, index) => ({
        name,
        enabled: true,
        plan: name,
        firedAt: 4000 + index * 20,
        seq: index + 2,
      }),
    );
    const file = join(out, 'report-client-timeline.html');
    await writeFile(file, formatClientHtmlReport(judgeSession(session), session));
    const context = await browser.newContext({ viewport: { width: 375, height: 800 } });
    const page = await context.newPage();
    await page.goto(pathToFileURL(file).href);
    const boxes = await page.locator('svg.timeline text.scenario-label').evaluateAll((items) =>
      items.map((item) => {
        const box = (item as SVGGraphicsElement).getBoundingClientRect();
        return { text: item.textContent, left: box.left, right: box.right, top: box.top, bottom: box.bottom };
      }),
    );
    expect(boxes.map((box) => box.text)).toEqual(['revocation', 'throttle', 'unavailable', 'narrowed-grant']);
    for (const [i, a] of boxes.entries())
      for (const b of boxes.slice(i + 1)) {
        const overlap = a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
        expect(overlap, `${a.text} overlaps ${b.text}`).toBe(false);
      }
    const ticks = await page
      .locator('svg.timeline text')
      .evaluateAll((items) =>
        items.map((item) => item.textContent ?? '').filter((text) => /^\d+ s$/.test(text)),
      );
    expect(Math.max(...ticks.map((tick) => Number.parseInt(tick, 10)))).toBeLessThanOrEqual(9);
    const svgWidth = await page.locator('svg.timeline').evaluate((svg) => svg.getBoundingClientRect().right);
    expect(svgWidth).toBeLessThanOrEqual(375);
    await page.screenshot({ path: join(out, 'report-client-timeline-375.png'), fullPage: true });
    await context.close();
  }, 60_000);

  it('a hostile session cannot act: markup stays text, and the CSP forbids any script', async () => {
    const attack = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>';
    const session = sessionOf(
      [tokenRequest(0, 'T1'), loans(10, 'T1', 200, { target: `/v3/partner/p1/loans?x=${attack}` })],
      [{ ref: 'T1', issuedAt: 5, expAt: 4000 }],
    );
    session.journey.command = [attack];
    session.scenarios = [{ name: 'throttle', enabled: true, plan: attack }];
    const html = formatClientHtmlReport(judgeSession(session), session);
    expect(html).not.toContain('<script>');
    expect(html).toContain("default-src 'none'");
    const file = join(out, 'report-client-hostile.html');
    await writeFile(file, html);
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(pathToFileURL(file).href);
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
    expect(await page.locator('script, img').count()).toBe(0);
    expect(await page.content()).toContain('&lt;script&gt;');
    // Negative control: the same page without escaping would run the script but for the CSP.
    const raw = html.replace('<body>', `<body>${attack}`);
    await writeFile(file, raw);
    await page.goto(pathToFileURL(file).href);
    expect(await page.locator('script').count()).toBe(1);
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
    await context.close();
  }, 60_000);
});
