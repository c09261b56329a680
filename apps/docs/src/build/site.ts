import { copyFile, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type GuideSource, loadGuides } from './guides.js';
import { escapeHtml } from './html.js';
import { type NavEntry, renderPage, renderReferencePage, siteTitle } from './layout.js';
import { createMarkdownRenderer, type Heading, type InternalLink } from './markdown.js';
import { referenceScript, referenceSpec, vendorRedocBundle } from './redoc.js';
import { extractSnippets } from './snippets.js';

const require = createRequire(import.meta.url);

/** apps/docs, found from both src/build (tests) and dist/build (the compiled build). */
export const packageRoot = fileURLToPath(new URL('../../', import.meta.url));

export interface BuildOptions {
  /** Where the site is written. Everything in it is replaced, except a `build` folder (the compiled builder). */
  outDir: string;
  /** Folder of the `NN-slug.md` guides. Default: apps/docs/guides. */
  guidesDir?: string;
  /** The bundled OpenAPI document. Default: `@partner-lending/spec/openapi.json`. */
  specFile?: string;
}

export interface BuildResult {
  outDir: string;
  /** Every page written, in navigation order (`index.html` first, `reference.html` last). */
  pages: readonly NavEntry[];
  guides: readonly GuideSource[];
}

export class SiteBuildError extends Error {
  override name = 'SiteBuildError';
}

interface Spec {
  paths?: Record<string, Record<string, { operationId?: string; tags?: string[] }>>;
}

/** Redoc's anchors: `tag/<name>` and `tag/<name>/operation/<operationId>` (and `operation/<id>` when untagged). */
function referenceAnchors(spec: Spec): Set<string> {
  const anchors = new Set<string>();
  for (const methods of Object.values(spec.paths ?? {})) {
    for (const operation of Object.values(methods)) {
      if (!operation.operationId) continue;
      anchors.add(`operation/${operation.operationId}`);
      for (const name of operation.tags ?? []) {
        const tag = name.replace(/\s+/g, '-');
        anchors.add(`tag/${tag}`);
        anchors.add(`tag/${tag}/operation/${operation.operationId}`);
      }
    }
  }
  return anchors;
}

/** The home page's cards show a guide's first sentence; the whole summary is its meta description. */
export function firstSentence(text: string): string {
  const end = text.search(/[.!?:](\s|$)/);
  return end === -1 ? text : `${text.slice(0, end)}.`;
}

function homeBody(guides: readonly GuideSource[], nav: readonly NavEntry[]): string {
  const first = guides[0];
  const cards = guides
    .map((guide) => {
      const entry = nav.find((e) => e.title === guide.title);
      return `<li><a class="card" href="${entry?.href ?? ''}"><strong>${escapeHtml(guide.title)}</strong><span>${escapeHtml(firstSentence(guide.summary))}</span></a></li>`;
    })
    .join('\n');
  return `<h1>${escapeHtml(siteTitle)}</h1>
<p class="lead">TypeScript tools for the Partner Lending API v3: a typed SDK that gets, caches and refreshes its own OAuth tokens, a strict local mock of the API, and the conformance suite that certifies an integration before production.</p>
${first ? `<p class="start"><a class="button" href="${nav.find((e) => e.title === first.title)?.href ?? ''}">Start here: ${escapeHtml(first.title)}</a> <a class="button secondary" href="reference.html">API reference</a></p>` : ''}
<h2 id="api-reference">API reference</h2>
<ul class="cards"><li><a class="card" href="reference.html"><strong>API reference</strong><span>The token endpoint and the four v3 partner paths, with the scope each one requires, rendered from the OpenAPI document (<code>openapi.json</code>).</span></a></li></ul>
<h2 id="guides">Guides</h2>
<ul class="cards">
${cards}
</ul>`;
}

async function cleanOutDir(outDir: string): Promise<void> {
  await mkdir(outDir, { recursive: true });
  for (const entry of await readdir(outDir)) {
    if (entry !== 'build') await rm(join(outDir, entry), { recursive: true, force: true });
  }
}

/** Builds the whole site: home page, one page per guide, the API reference, and the local assets. */
export async function buildSite(options: BuildOptions): Promise<BuildResult> {
  const guidesDir = options.guidesDir ?? join(packageRoot, 'guides');
  const specFile = options.specFile ?? require.resolve('@partner-lending/spec/openapi.json');
  const guides = await loadGuides(guidesDir);
  if (guides.length === 0) throw new SiteBuildError(`no guide in ${guidesDir}; add NN-slug.md files.`);

  let specText: string;
  try {
    specText = await readFile(specFile, 'utf8');
  } catch (cause) {
    throw new SiteBuildError(
      `cannot read the bundled spec at ${specFile}; build it first with \`pnpm --filter @partner-lending/spec build\`.`,
      { cause },
    );
  }
  const spec = JSON.parse(specText) as Spec;

  const nav: NavEntry[] = [
    { title: 'Home', href: 'index.html', section: 'Start' },
    ...guides.map(
      (guide): NavEntry => ({ title: guide.title, href: `${guide.slug}.html`, section: 'Guides' }),
    ),
    { title: 'API reference', href: 'reference.html', section: 'Reference' },
  ];

  const render = createMarkdownRenderer();
  const rendered = guides.map((guide) => {
    extractSnippets(guide.markdown, guide.file); // validates every fence's language
    return { guide, ...render(guide.markdown) };
  });

  const anchors = new Map<string, Set<string>>();
  for (const page of rendered)
    anchors.set(`${page.guide.slug}.html`, new Set(page.headings.map((h) => h.id)));
  anchors.set('index.html', new Set(['api-reference', 'guides']));
  anchors.set('reference.html', referenceAnchors(spec));
  const broken: string[] = [];
  for (const page of rendered) {
    for (const link of page.links as InternalLink[]) {
      const target = link.page === '' ? `${page.guide.slug}.html` : link.page;
      const known = anchors.get(target);
      if (!known) broken.push(`${page.guide.file}:${link.line}: ${link.written} (no such page)`);
      else if (link.fragment !== '' && !known.has(decodeURIComponent(link.fragment))) {
        broken.push(
          `${page.guide.file}:${link.line}: ${link.written} (no heading or operation #${link.fragment})`,
        );
      }
    }
  }
  if (broken.length > 0) throw new SiteBuildError(`broken links:\n  ${broken.join('\n  ')}`);

  const outDir = options.outDir;
  await cleanOutDir(outDir);
  await mkdir(join(outDir, 'assets'), { recursive: true });

  const home = nav[0] as NavEntry;
  await writeFile(
    join(outDir, 'index.html'),
    renderPage({
      title: siteTitle,
      current: home,
      nav,
      body: homeBody(guides, nav),
      headings: [] as Heading[],
      description: 'Guides and API reference of the Partner Lending toolkit.',
    }),
  );
  for (const page of rendered) {
    const current = nav.find((entry) => entry.href === `${page.guide.slug}.html`) as NavEntry;
    await writeFile(
      join(outDir, current.href),
      renderPage({
        title: page.guide.title,
        current,
        nav,
        body: page.html,
        headings: page.headings,
        description: page.guide.summary,
      }),
    );
  }
  const reference = nav[nav.length - 1] as NavEntry;
  await writeFile(join(outDir, reference.href), renderReferencePage({ nav, current: reference }));

  await writeFile(join(outDir, 'openapi.json'), specText);
  const redocBundle = require.resolve('redoc/bundles/redoc.standalone.js');
  await writeFile(
    join(outDir, 'assets/redoc.standalone.js'),
    vendorRedocBundle(await readFile(redocBundle, 'utf8')),
  );
  await copyFile(`${redocBundle}.LICENSE.txt`, join(outDir, 'assets/redoc.standalone.js.LICENSE.txt'));
  await writeFile(
    join(outDir, 'assets/openapi.reference.json'),
    JSON.stringify(referenceSpec(JSON.parse(specText))),
  );
  await writeFile(join(outDir, 'assets/reference.js'), referenceScript('assets/openapi.reference.json'));
  await copyFile(join(packageRoot, 'theme/site.css'), join(outDir, 'assets/site.css'));
  await copyFile(require.resolve('highlight.js/styles/github.css'), join(outDir, 'assets/highlight.css'));

  return { outDir, pages: nav, guides };
}
