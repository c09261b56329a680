import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatClientHtmlReport, judgeSession, runConformanceDetailed } from '../../../src/index.js';
import { formatHtmlReport } from '../../../src/reporters/html/server.js';
import { loans, sessionOf, tokenRequest } from '../../client/support/session.js';
import { sharedSigningKey } from '../../helpers.js';

// The HTML reports in Debian's Chromium: they load nothing from elsewhere, fit a 375-px phone screen,
// and print with every evidence section open.
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const out = fileURLToPath(new URL('../../../test-results/', import.meta.url));
let browser: Browser;

beforeAll(async () => {
  browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
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
});
