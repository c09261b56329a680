import { escapeHtml } from './html.js';
import type { Heading } from './markdown.js';

/** One page of the site, in navigation order. */
export interface NavEntry {
  title: string;
  /** Output file name, e.g. `quick-start.html`. */
  href: string;
  section: 'Start' | 'Guides' | 'Reference';
}

export const siteTitle = 'Partner Lending toolkit';

interface PageOptions {
  title: string;
  /** The page's own nav entry (marked current, and the anchor for prev/next). */
  current: NavEntry;
  nav: readonly NavEntry[];
  /** Already-rendered HTML of the article. */
  body: string;
  headings?: readonly Heading[];
  description: string;
}

function head(title: string, description: string, styles: readonly string[]): string {
  const links = styles.map((href) => `<link rel="stylesheet" href="${href}">`).join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(contentSecurityPolicy)}">
<title>${escapeHtml(title === siteTitle ? title : `${title} · ${siteTitle}`)}</title>
<meta name="description" content="${escapeHtml(description)}">
<link rel="icon" href="data:,">
${links}
</head>`;
}

/**
 * Every page declares that it loads nothing from another origin: scripts, styles, images, fonts,
 * fetches and workers come from the site itself (Redoc builds its search worker from a blob: URL and
 * injects its styles inline). A future edit that adds a CDN link is then refused by the browser, and
 * the browser test reports the console error.
 */
export const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'none'",
].join('; ');

function header(nav: readonly NavEntry[], current: NavEntry): string {
  const items = nav
    .map(
      (entry) =>
        `<li><a href="${entry.href}"${entry.href === current.href ? ' aria-current="page"' : ''}>${escapeHtml(entry.title)}</a></li>`,
    )
    .join('');
  const guide = nav.find((entry) => entry.section === 'Guides');
  const reference = nav.find((entry) => entry.section === 'Reference');
  return `<a class="skip-link" href="#content">Skip to content</a>
<header class="site-header">
<a class="brand" href="index.html">${escapeHtml(siteTitle)}</a>
<nav class="header-links" aria-label="Sections">
${guide ? `<a href="${guide.href}">Guides</a>` : ''}
${reference ? `<a href="${reference.href}">API reference</a>` : ''}
<details class="all-pages"><summary>All pages</summary><ul>${items}</ul></details>
</nav>
</header>`;
}

function sidebar(nav: readonly NavEntry[], current: NavEntry, headings: readonly Heading[]): string {
  const sections: string[] = [];
  for (const section of ['Start', 'Guides', 'Reference'] as const) {
    const entries = nav.filter((entry) => entry.section === section);
    if (entries.length === 0) continue;
    const items = entries
      .map((entry) => {
        const isCurrent = entry.href === current.href;
        const toc =
          isCurrent && headings.some((h) => h.level === 2)
            ? `<ul class="toc">${headings
                .filter((h) => h.level === 2)
                .map((h) => `<li><a href="#${escapeHtml(h.id)}">${escapeHtml(h.text)}</a></li>`)
                .join('')}</ul>`
            : '';
        return `<li><a href="${entry.href}"${isCurrent ? ' aria-current="page"' : ''}>${escapeHtml(entry.title)}</a>${toc}</li>`;
      })
      .join('');
    sections.push(`<h2>${section}</h2><ul>${items}</ul>`);
  }
  return `<nav class="sidebar" aria-label="Pages">${sections.join('')}</nav>`;
}

function pager(nav: readonly NavEntry[], current: NavEntry): string {
  const index = nav.findIndex((entry) => entry.href === current.href);
  const prev = index > 0 ? nav[index - 1] : undefined;
  const next = index >= 0 ? nav[index + 1] : undefined;
  const link = (entry: NavEntry | undefined, rel: 'prev' | 'next') =>
    entry
      ? `<a class="pager-link pager-${rel}" rel="${rel}" href="${entry.href}"><span>${rel === 'prev' ? 'Previous' : 'Next'}</span>${escapeHtml(entry.title)}</a>`
      : '<span></span>';
  return `<nav class="pager" aria-label="Previous and next page">${link(prev, 'prev')}${link(next, 'next')}</nav>`;
}

/** A guide or the home page: header, sidebar with every page, the article, previous/next links. */
export function renderPage(options: PageOptions): string {
  const { title, current, nav, body, headings = [], description } = options;
  return `${head(title, description, ['assets/site.css', 'assets/highlight.css'])}
<body class="page">
${header(nav, current)}
<div class="layout">
${sidebar(nav, current, headings)}
<main id="content">
<article class="prose">
${body}
</article>
${pager(nav, current)}
</main>
</div>
</body>
</html>
`;
}

/** The API reference: the site header over Redoc, which brings its own operation sidebar. */
export function renderReferencePage(options: { nav: readonly NavEntry[]; current: NavEntry }): string {
  return `${head('API reference', 'The Partner Lending API v3 reference, rendered from the OpenAPI document.', ['assets/site.css'])}
<body class="reference">
${header(options.nav, options.current)}
<span id="content"></span>
<noscript><p class="noscript">The API reference needs JavaScript. The OpenAPI document itself is <a href="openapi.json">openapi.json</a>.</p></noscript>
<div id="redoc" tabindex="-1"></div>
<script src="assets/redoc.standalone.js"></script>
<script src="assets/reference.js"></script>
</body>
</html>
`;
}
