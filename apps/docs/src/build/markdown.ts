import MarkdownIt from 'markdown-it';
import { escapeHtml } from './html.js';
import { highlight, isFenceLanguage } from './languages.js';

/** A level-2 or level-3 heading of a page, with the id it gets in the HTML. */
export interface Heading {
  level: 2 | 3;
  id: string;
  text: string;
}

/** A link from a guide to a page of the site, as written (`02-authentication.md#scopes`). */
export interface InternalLink {
  /** Output page, e.g. `authentication.html`, `reference.html` or `index.html`. */
  page: string;
  /** Fragment without `#`, or '' for none. */
  fragment: string;
  /** 1-based line in the guide. */
  line: number;
  written: string;
}

export interface RenderedMarkdown {
  html: string;
  headings: Heading[];
  links: InternalLink[];
}

interface RenderEnv {
  headings: Heading[];
  links: InternalLink[];
  ids: Map<string, number>;
}

/** A guide link target: another guide's source file, so that links also work when reading on GitHub. */
const GUIDE_LINK = /^(?:\.\/)?\d{2}-([a-z0-9-]+)\.md(?:#(.*))?$/;
/** Links to the generated pages, for the reference and home page which have no Markdown source. */
const PAGE_LINK = /^(?:\.\/)?(index|reference)\.html(?:#(.*))?$/;

/** Lowercase words joined by "-", the usual heading-anchor convention (GitHub's, roughly). */
export function slugify(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s-]/gu, '')
    .trim()
    .replace(/\s+/g, '-');
}

/**
 * The Markdown renderer of the guides: CommonMark + tables (markdown-it), highlight.js for fences,
 * ids and self-links on h2/h3, and guide links (`NN-slug.md`) rewritten to the built pages.
 * Raw HTML in guides is off: a guide is text, and the layout owns the markup.
 */
export function createMarkdownRenderer(): (markdown: string) => RenderedMarkdown {
  const md = new MarkdownIt({
    html: false,
    linkify: false,
    typographer: false,
    highlight(code, info) {
      const language = info.trim().split(/\s+/)[0] ?? '';
      if (!isFenceLanguage(language)) return '';
      return `<pre class="code" data-language="${escapeHtml(language)}"><code class="hljs language-${escapeHtml(language)}">${highlight(code, language)}</code></pre>`;
    },
  });

  md.core.ruler.push('headings-and-links', (state) => {
    const env = state.env as RenderEnv;
    const tokens = state.tokens;
    for (let index = 0; index < tokens.length; index += 1) {
      const token = tokens[index];
      const inline = tokens[index + 1];
      if (token?.type === 'heading_open' && (token.tag === 'h2' || token.tag === 'h3') && inline) {
        const text = inline.children?.map((child) => child.content).join('') ?? inline.content;
        let id = slugify(text);
        const count = env.ids.get(id) ?? 0;
        env.ids.set(id, count + 1);
        if (count > 0) id = `${id}-${count}`;
        token.attrSet('id', id);
        env.headings.push({ level: token.tag === 'h2' ? 2 : 3, id, text });
      }
      if (token?.type !== 'inline') continue;
      let line = (token.map?.[0] ?? 0) + 1;
      for (const child of token.children ?? []) {
        if (child.type === 'softbreak' || child.type === 'hardbreak') line += 1;
        if (child.type !== 'link_open') continue;
        const href = child.attrGet('href') ?? '';
        const guide = GUIDE_LINK.exec(href);
        const page = PAGE_LINK.exec(href);
        if (guide) {
          const target = `${guide[1]}.html`;
          const fragment = guide[2] ?? '';
          child.attrSet('href', fragment ? `${target}#${fragment}` : target);
          env.links.push({ page: target, fragment, line, written: href });
        } else if (page) {
          env.links.push({ page: `${page[1]}.html`, fragment: page[2] ?? '', line, written: href });
        } else if (href.startsWith('#')) {
          env.links.push({ page: '', fragment: href.slice(1), line, written: href });
        } else if (/^https?:\/\//.test(href)) {
          child.attrSet('rel', 'noopener');
        }
      }
    }
  });

  const heading = md.renderer.rules.heading_open;
  md.renderer.rules.heading_open = (tokens, index, options, env, self) => {
    const open = heading
      ? heading(tokens, index, options, env, self)
      : self.renderToken(tokens, index, options);
    const id = tokens[index]?.attrGet('id');
    return id
      ? `${open}<a class="anchor" href="#${escapeHtml(id)}" aria-hidden="true" tabindex="-1">#</a>`
      : open;
  };

  // Wide tables scroll inside their own box instead of pushing the page sideways.
  md.renderer.rules.table_open = () => '<div class="table-wrap"><table>\n';
  md.renderer.rules.table_close = () => '</table></div>\n';

  return (markdown) => {
    const env: RenderEnv = { headings: [], links: [], ids: new Map() };
    const html = md.render(markdown, env);
    return { html, headings: env.headings, links: env.links };
  };
}
