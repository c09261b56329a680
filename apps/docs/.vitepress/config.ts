import { type DefaultTheme, defineConfigWithTheme } from 'vitepress';
import { writeGenerated } from '../src/site/generate.js';
import { guideRewrites } from '../src/site/guides.js';
import { sitePlugin } from '../src/site/markdown.js';
import { slugify } from '../src/site/slug.js';

// The build writes public/ (Redoc, the spec) and generated/ (the reference's text pages, the
// changelog) before VitePress reads the pages, so every build starts from the current spec, guides
// and changesets.
const sources = writeGenerated();
const { guides } = sources;

/** A guide's first sentence, for its card on the home page. */
function firstSentence(text: string): string {
  const plain = text.replace(/`([^`]*)`/g, '$1').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
  const end = plain.search(/[.!?:](\s|$)/);
  return end === -1 ? plain : `${plain.slice(0, end)}.`;
}

const contentSecurityPolicy = [
  "default-src 'self'",
  // VitePress's pages carry two small inline scripts (the colour scheme, the page hash map).
  "script-src 'self' 'unsafe-inline'",
  // Redoc styles itself with styled-components (inline <style>).
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  // Redoc's search runs in a blob: worker.
  "worker-src 'self' blob:",
  "connect-src 'self'",
].join('; ');

/** The home page's list of guides (GuideList.vue). */
export interface GuideCard {
  title: string;
  summary: string;
  link: string;
}

export default defineConfigWithTheme<DefaultTheme.Config & { guideCards: GuideCard[] }>({
  title: 'Partner Lending toolkit',
  description:
    'TypeScript tools for the Partner Lending API v3: a typed SDK, a strict local mock and the conformance suite that certifies an integration.',
  lang: 'en',
  // GitHub Pages serves a project site under /<repository>/: the docs workflow sets DOCS_BASE.
  base: process.env.DOCS_BASE ?? '/',
  outDir: process.env.DOCS_OUT_DIR ?? 'dist',
  srcExclude: ['README.md', 'test/**', 'test-results/**', 'dist/**', 'node_modules/**'],
  rewrites: {
    ...guideRewrites(guides),
    'generated/changelog.md': 'changelog.md',
    'generated/reference/:tag.md': 'reference/:tag.md',
  },
  // Nothing from another origin: no web fonts (the theme without fonts, system fonts in style.css),
  // no Algolia (local search), and the browser refuses anything else.
  head: [
    ['meta', { 'http-equiv': 'Content-Security-Policy', content: contentSecurityPolicy }],
    ['link', { rel: 'icon', href: 'data:,' }],
  ],
  markdown: {
    anchor: { slugify },
    config: (md) => {
      md.use(sitePlugin(() => guides));
    },
  },
  themeConfig: {
    guideCards: guides.map((guide) => ({
      title: guide.title,
      summary: firstSentence(guide.summary),
      link: `/${guide.slug}.html`,
    })),
    search: {
      provider: 'local',
      options: {
        detailedView: true,
        // The changelog names every feature once, so it would top most searches; it stays out of the
        // index (frontmatter search: false) and readers land on the guides. A boostDocument function
        // would need eval in the browser, which the site's CSP refuses.
      },
    },
    outline: { level: [2, 3], label: 'On this page' },
    nav: [
      { text: 'Guides', link: `/${guides[0]?.slug ?? 'index'}.md` },
      { text: 'API at a glance', link: '/api-at-a-glance.md' },
      { text: 'API reference', link: '/reference.md' },
      { text: 'Changelog', link: '/changelog.md' },
    ],
    sidebar: [
      {
        text: 'Guides',
        items: guides.map((guide) => ({ text: guide.title, link: `/${guide.slug}.md` })),
      },
      {
        text: 'The API',
        items: [
          { text: 'API at a glance', link: '/api-at-a-glance.md' },
          { text: 'Interactive reference', link: '/reference.md' },
          ...sources.referencePages.map((page) => ({
            text: `Reference: ${page.title}`,
            link: `/${page.file}`,
          })),
        ],
      },
      {
        text: 'The project',
        items: [
          { text: 'Architecture', link: '/architecture.md' },
          { text: 'Changelog', link: '/changelog.md' },
        ],
      },
    ],
    editLink: {
      // A string, not a function: VitePress would ship a function as code evaluated from a string,
      // which the Content-Security-Policy (no 'unsafe-eval') refuses.
      pattern: 'https://github.com/partner-lending/toolkit/edit/main/apps/docs/:path',
      text: 'Edit this page',
    },
    docFooter: { prev: 'Previous', next: 'Next' },
    footer: { message: 'MIT licence. Nothing on this site loads from another origin.' },
  },
});
