import { checkFence, type FenceToken } from './fences.js';
import type { Guide } from './guides.js';

interface Token extends FenceToken {
  children: Token[] | null;
  attrGet(name: string): string | null;
  attrSet(name: string, value: string): void;
}
interface State {
  tokens: Token[];
  env: { relativePath?: string };
}
interface MarkdownIt {
  core: { ruler: { push(name: string, rule: (state: State) => void): void } };
}

const GUIDE_LINK = /^(?:\.\/|\.\.\/guides\/|\/guides\/|guides\/)?(\d{2})-([a-z0-9-]+)\.md(#.*)?$/;

/**
 * A markdown-it plugin for the site, run by VitePress on every page:
 * - a link to a guide by its file (`02-authentication.md#scopes`, the form that works on GitHub) is
 *   pointed at the guide's page (`/authentication.md#scopes`, which VitePress turns into
 *   `/authentication.html#scopes` and checks like any other link);
 * - every code block must name a known language (and only known flags), or the build fails naming
 *   file and line: a TypeScript block cannot escape the snippet type-check by a missing label.
 */
export function sitePlugin(guides: () => readonly Guide[]) {
  return (md: MarkdownIt): void => {
    md.core.ruler.push('partner_site', (state) => {
      const file = state.env.relativePath ?? '(a page)';
      const bySlug = new Map(guides().map((g) => [g.file, g]));
      for (const token of state.tokens) {
        if (token.type === 'fence' || token.type === 'code_block') checkFence(token, file);
        for (const child of token.children ?? []) {
          if (child.type !== 'link_open') continue;
          const href = child.attrGet('href') ?? '';
          const match = GUIDE_LINK.exec(href);
          if (!match) continue;
          const guide = bySlug.get(`${match[1]}-${match[2]}.md`);
          if (!guide)
            throw new Error(
              `${file}: link to ${href}, which is not a guide (guides/${match[1]}-${match[2]}.md).`,
            );
          child.attrSet('href', `/${guide.slug}.md${match[3] ?? ''}`);
        }
      }
    });
  };
}
