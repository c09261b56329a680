import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { operations } from '@partner-lending/spec';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { launchChromium } from '../../../test-support/chromium.js';
import { loadGuides } from '../src/site/guides.js';
import { docsRoot } from './helpers/build-site.js';
import { type StaticServer, startStaticServer } from './helpers/static-server.js';

// The built site (VitePress, built once for this run by global-setup.ts) in Debian's Chromium — never
// a downloaded browser — served from 127.0.0.1. Every request that leaves loopback is blocked and
// recorded as a failure, as are failed requests, HTTP errors and console errors or warnings.

const artifacts = join(docsRoot, 'test-results');
const guides = loadGuides(join(docsRoot, 'guides'));

let server: StaticServer;
let browser: Browser;
let context: BrowserContext;
const problems: string[] = [];
const blocked: string[] = [];

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
  page.on('requestfailed', (request) => {
    if (!blocked.includes(request.url()))
      problems.push(`${path}: request failed: ${request.url()} (${request.failure()?.errorText})`);
  });
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`${path}: HTTP ${response.status()} for ${response.url()}`);
  });
  const response = await page.goto(new URL(path, server.url).href, { waitUntil: 'load' });
  expect(response?.status(), path).toBe(200);
  return page;
}

/** Opens the local search, types the query, and returns the result links' paths. */
async function search(page: Page, query: string): Promise<string[]> {
  await page.locator('.VPNavBarSearch button').click();
  const input = page.locator('#localsearch-input');
  await input.fill(query);
  const results = page.locator('#localsearch-list li > a');
  await results.first().waitFor({ timeout: 20_000 });
  await page.waitForTimeout(300); // let the debounced list settle on the last query
  const hrefs = await results.evaluateAll((links) => links.map((a) => (a as HTMLAnchorElement).pathname));
  return hrefs;
}

beforeAll(async () => {
  server = await startStaticServer(inject('siteDir'));
  browser = await launchChromium(chromium);
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.route('**/*', async (route) => {
    const url = new URL(route.request().url());
    if (url.protocol === 'http:' && isLoopback(url)) return route.continue();
    blocked.push(url.href);
    return route.abort('blockedbyclient');
  });
  await mkdir(artifacts, { recursive: true });
});

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await server?.close();
});

describe('docs site in Chromium', () => {
  it('blocks and records a request to another origin (the guard this test relies on)', async () => {
    const page = await context.newPage();
    await page.goto(server.url);
    const outcome = await page.evaluate(() =>
      fetch('https://example.invalid/probe').then(
        () => 'loaded',
        () => 'refused',
      ),
    );
    expect(outcome).toBe('refused');
    // The page's Content-Security-Policy may refuse it before the route does; either way it never leaves.
    expect(blocked.filter((u) => u.startsWith('https://example.invalid')).length).toBeLessThanOrEqual(1);
    blocked.length = 0;
    await page.close();
  });

  it('home page links to the guides, the API at a glance and the reference; "Start here" opens the first guide', async () => {
    const page = await open('index.html');
    await expect(page.title()).resolves.toBe('Partner Lending toolkit');
    const hrefs = await page
      .locator('.VPContent a')
      .evaluateAll((links) => links.map((a) => (a as HTMLAnchorElement).pathname));
    expect(hrefs).toContain('/reference.html');
    expect(hrefs).toContain('/api-at-a-glance.html');
    for (const guide of guides) expect(hrefs).toContain(`/${guide.slug}.html`);
    await page.screenshot({ path: join(artifacts, 'home.png'), fullPage: true });
    await page.getByRole('link', { name: 'Start here' }).click();
    await page.waitForURL(`**/${guides[0]!.slug}.html`);
    await expect(page.locator('.vp-doc h1').first().textContent()).resolves.toContain(guides[0]!.title);
    await page.close();
  });

  it('each guide has its title, highlighted code, the sidebar in NN order and previous/next links', async () => {
    for (const [index, guide] of guides.entries()) {
      const path = `${guide.slug}.html`;
      const page = await open(path);
      await expect(page.title(), path).resolves.toBe(`${guide.title} | Partner Lending toolkit`);
      await expect(page.locator('.vp-doc h1').first().textContent(), path).resolves.toContain(guide.title);
      expect((await page.locator('.vp-doc').textContent())?.length ?? 0, path).toBeGreaterThan(800);
      expect(
        await page.locator('.vp-doc pre.shiki span[style*="--shiki"]').count(),
        `${path} highlighting`,
      ).toBeGreaterThan(0);
      const sidebar = await page
        .locator('.VPSidebar .VPSidebarItem.level-0')
        .first()
        .locator('a')
        .evaluateAll((links) => links.map((a) => (a as HTMLAnchorElement).pathname));
      expect(sidebar, `${path} sidebar`).toEqual(guides.map((g) => `/${g.slug}.html`));
      await expect(
        page.locator('.VPSidebar a.VPLink.active, .VPSidebar .is-active a').first().getAttribute('href'),
      ).resolves.toContain(`/${guide.slug}`);
      const prev = page.locator('.pager-link.prev');
      const next = page.locator('.pager-link.next');
      if (index > 0)
        await expect(prev.getAttribute('href')).resolves.toBe(`/${guides[index - 1]!.slug}.html`);
      if (index < guides.length - 1)
        await expect(next.getAttribute('href')).resolves.toBe(`/${guides[index + 1]!.slug}.html`);
      if (index === 1) await page.screenshot({ path: join(artifacts, 'guide.png') });
      await page.close();
    }
  });

  it('the API reference renders every operation with its scope from the local Redoc and links back to the guides', async () => {
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
    // Operation → guide: the pagination guide links to listLoans, so listLoans links back to it.
    const listLoans = page.locator('[id$="/operation/listLoans"]');
    const back = listLoans.locator('a[href*="/pagination.html"]').first();
    await expect(back.count()).resolves.toBe(1);
    await listLoans
      .locator('h2')
      .first()
      .evaluate((heading) => heading.scrollIntoView());
    await page.screenshot({ path: join(artifacts, 'reference.png') });
    await back.click();
    await page.waitForURL('**/pagination.html*');
    await expect(page.locator('.vp-doc h1').first().textContent()).resolves.toContain('Pagination');
    await page.close();
  });

  it.each([
    ['insufficient_scope', ['/errors.html', '/authentication.html', '/certification.html'], '/reference/'],
    // "Retry-After" is in so many guides now that the 16 results VitePress lists are all guides (the
    // search below still checks a guide tops it): the reference is checked here with the error codes.
    ['partner isolation', ['/api-at-a-glance.html', '/security.html', '/certification.html'], '/reference/'],
    ['invalid_target', ['/api-at-a-glance.html'], '/reference/authentication.html'],
  ])('searching "%s" finds a guide page and the reference', async (query, pages, reference) => {
    const page = await open('index.html');
    const hrefs = await search(page, query);
    expect(
      hrefs.some((href) => pages.includes(href)),
      `${query}: ${hrefs.join(', ')}`,
    ).toBe(true);
    expect(
      hrefs.some((href) => href.startsWith(reference)),
      `${query}: ${hrefs.join(', ')}`,
    ).toBe(true);
    if (query === 'insufficient_scope') await page.screenshot({ path: join(artifacts, 'search.png') });
    await page.close();
  });

  it.each(['retry', 'token', 'Retry-After'])(
    'searching "%s" ranks a guide above the changelog',
    async (query) => {
      const page = await open('index.html');
      const hrefs = await search(page, query);
      const changelog = hrefs.findIndex((href) => href.startsWith('/changelog'));
      const firstGuide = hrefs.findIndex(
        (href) => !href.startsWith('/changelog') && !href.startsWith('/reference/'),
      );
      expect(firstGuide, `${query}: ${hrefs.join(', ')}`).toBeGreaterThanOrEqual(0);
      if (changelog >= 0) expect(firstGuide, `${query}: ${hrefs.join(', ')}`).toBeLessThan(changelog);
      expect(hrefs[0], `${query}: ${hrefs.join(', ')}`).not.toMatch(/^\/changelog/);
      expect(
        hrefs.some((href) => href.startsWith('/changelog')),
        'the changelog is out of the index',
      ).toBe(false);
      await page.close();
    },
  );

  it.each([
    ['authentication.html', 'The token lifecycle'],
    ['fleet.html', 'One token for a fleet'],
    ['certification.html', 'Certification, both modes'],
    ['certify-your-integration.html', 'Certification, both modes'],
  ])('%s shows its diagram (%s), built into the site', async (path, title) => {
    const page = await open(path);
    // Vite takes the SVG in at build time: a fingerprinted /assets file, or a data: URI when small.
    const image = page.locator(`.vp-doc img[alt^="${title}"]`);
    await image.scrollIntoViewIfNeeded();
    const size = await image.evaluate((img) => (img as HTMLImageElement).naturalWidth);
    expect(size, `${path}: ${title}`).toBeGreaterThan(500);
    expect(await image.getAttribute('alt')).toMatch(/^.{60,}$/);
    expect(await image.getAttribute('src')).toMatch(/^(\/assets\/.+\.svg|data:image\/svg\+xml)/);
    await page.close();
  });

  it('a search for a word no page has finds nothing (the result lists above are not everything)', async () => {
    const page = await open('index.html');
    await page.locator('.VPNavBarSearch button').click();
    await page.locator('#localsearch-input').fill('zyxwvutsrqp');
    await expect(page.locator('.no-results').waitFor({ timeout: 20_000 })).resolves.toBeUndefined();
    await expect(page.locator('#localsearch-list li > a').count()).resolves.toBe(0);
    await page.close();
  });

  it('made no external request, no failed request and logged no console error or warning', () => {
    expect(blocked, 'requests to another origin').toEqual([]);
    expect(problems).toEqual([]);
  });
});
