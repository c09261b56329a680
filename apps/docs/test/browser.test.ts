import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { apiOperationIds, operations, scopeFor } from '@partner-lending/spec';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BuildResult, buildSite, packageRoot } from '../src/build/site.js';
import { type StaticServer, startStaticServer } from '../src/build/static-server.js';

// The built site in Debian's Chromium (never a downloaded browser), served from 127.0.0.1. The test
// builds the site itself, into a temporary folder, with the same buildSite() as `pnpm build`: it never
// looks at a stale dist. Every request that leaves loopback is blocked and recorded as a failure.

const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const artifacts = join(packageRoot, 'test-results');

let outDir: string;
let site: BuildResult;
let server: StaticServer;
let browser: Browser;
let context: BrowserContext;
const problems: string[] = [];

function isLoopback(url: URL): boolean {
  return url.hostname === '127.0.0.1' || url.hostname === 'localhost' || url.hostname === '[::1]';
}

async function open(path: string): Promise<Page> {
  const page = await context.newPage();
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') {
      problems.push(`${path}: console ${message.type()}: ${message.text()}`);
    }
  });
  page.on('pageerror', (error) => problems.push(`${path}: uncaught ${error.message}`));
  page.on('requestfailed', (request) =>
    problems.push(`${path}: request failed: ${request.url()} (${request.failure()?.errorText})`),
  );
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`${path}: HTTP ${response.status()} for ${response.url()}`);
  });
  const response = await page.goto(new URL(path, server.url).href, { waitUntil: 'load' });
  expect(response?.status(), path).toBe(200);
  return page;
}

beforeAll(async () => {
  outDir = await mkdtemp(join(tmpdir(), 'partner-docs-'));
  site = await buildSite({ outDir });
  server = await startStaticServer(outDir);
  browser = await chromium.launch({
    executablePath: chromiumPath,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.route('**/*', async (route) => {
    const url = new URL(route.request().url());
    if (url.protocol === 'http:' && isLoopback(url)) return route.continue();
    problems.push(`external request blocked: ${url.href}`);
    return route.abort('blockedbyclient');
  });
  await mkdir(artifacts, { recursive: true });
}, 60_000);

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await server?.close();
  if (outDir) await rm(outDir, { recursive: true, force: true });
});

describe('docs site in Chromium', { timeout: 60_000 }, () => {
  it('home page links to the API reference and to every guide', async () => {
    const page = await open('index.html');
    await expect(page.title()).resolves.toBe('Partner Lending toolkit');
    const hrefs = await page
      .locator('main a')
      .evaluateAll((links) => links.map((a) => a.getAttribute('href')));
    expect(hrefs).toContain('reference.html');
    for (const guide of site.guides) expect(hrefs).toContain(`${guide.slug}.html`);
    await page.screenshot({ path: join(artifacts, 'home.png'), fullPage: true });
    await page.getByRole('link', { name: `Start here: ${site.guides[0]?.title}` }).click();
    await expect(page.locator('h1').textContent()).resolves.toBe(site.guides[0]?.title);
    await page.close();
    expect(problems).toEqual([]);
  });

  it('each guide renders with its title, content, highlighted code and navigation', async () => {
    const pages = site.pages;
    for (const [index, guide] of site.guides.entries()) {
      const path = `${guide.slug}.html`;
      const page = await open(path);
      await expect(page.title(), path).resolves.toBe(`${guide.title} · Partner Lending toolkit`);
      await expect(page.locator('article h1').textContent(), path).resolves.toBe(guide.title);
      const text = (await page.locator('article').textContent())?.length ?? 0;
      expect(text, `${path} article length`).toBeGreaterThan(800);
      expect(await page.locator('article pre code.hljs').count(), `${path} code blocks`).toBeGreaterThan(0);
      expect(
        await page.locator('article pre code span[class^="hljs-"]').count(),
        `${path} highlighting`,
      ).toBeGreaterThan(0);
      const sidebar = await page
        .locator('nav.sidebar a:not(.toc a)')
        .evaluateAll((links) => links.map((a) => a.getAttribute('href')));
      expect(sidebar, `${path} sidebar`).toEqual(pages.map((entry) => entry.href));
      await expect(page.locator('nav.sidebar a[aria-current="page"]').getAttribute('href')).resolves.toBe(
        path,
      );
      // Previous/next follow the navigation order: home, the guides, the API reference.
      await expect(page.locator('a[rel="prev"]').getAttribute('href')).resolves.toBe(pages[index]?.href);
      await expect(page.locator('a[rel="next"]').getAttribute('href')).resolves.toBe(pages[index + 2]?.href);
      const css = await page
        .locator('pre code.hljs')
        .first()
        .evaluate((el) => getComputedStyle(el).fontFamily);
      expect(css, `${path} code font (site CSS loaded)`).toMatch(/monospace/);
      await page.close();
    }
    expect(problems).toEqual([]);
  });

  it('the API reference lists the five operations with their scopes, from the local Redoc and spec', async () => {
    const page = await open('reference.html');
    await page.waitForFunction(() => document.documentElement.dataset.reference !== undefined, null, {
      timeout: 45_000,
    });
    await expect(page.evaluate(() => document.documentElement.dataset.reference)).resolves.toBe('ready');
    expect(Object.keys(operations)).toHaveLength(5);
    for (const [id, operation] of Object.entries(operations)) {
      const section = page.locator(`[id$="/operation/${id}"]`);
      await expect(section.count(), id).resolves.toBe(1);
      await expect(section.textContent(), id).resolves.toContain(operation.path);
      const authorizations = section.getByRole('heading', { name: 'Authorizations:' });
      if (operation.scope === null) {
        await expect(authorizations.count(), `${id} needs no token`).resolves.toBe(0);
        continue;
      }
      await authorizations.click(); // Redoc shows the scopes of a requirement once it is expanded
      // biome-ignore lint/performance/useDomNodeTextContent: a Playwright locator; the rendered text is the point
      await expect(authorizations.locator('xpath=../..').innerText(), id).resolves.toContain(
        `partnerOAuth (${operation.scope})`,
      );
    }
    expect(apiOperationIds.map((id) => scopeFor(id))).toHaveLength(4);
    await page
      .locator('[id$="/operation/listLoans"] h2')
      .first()
      .evaluate((heading) => heading.scrollIntoView());
    await page.screenshot({ path: join(artifacts, 'reference.png') });
    await page.close();
    expect(problems).toEqual([]);
  });

  it('made no external request, no failed request and logged no console error', () => {
    expect(problems).toEqual([]);
  });
});
