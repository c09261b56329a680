import { createMarkdownRenderer } from 'vitepress';
import { describe, expect, it } from 'vitest';
import { extractSnippets, FenceError, runnableSnippets, typeCheckedSnippets } from '../../src/site/fences.js';
import { sitePlugin } from '../../src/site/markdown.js';
import { docsRoot } from '../helpers/build-site.js';

const md = await createMarkdownRenderer(docsRoot);

describe('code fences', () => {
  it('finds every fence with its line, language and flags, with the site parser (lists included)', () => {
    const snippets = extractSnippets(
      md.parse(
        '# T\n\n```ts run\nconst a = 1;\n```\n\n- item\n\n  ```sh\n  ls\n  ```\n\n```ts no-typecheck\nx\n```\n',
        {},
      ),
      'x.md',
    );
    expect(snippets.map((s) => [s.line, s.language, s.flags.join(',')])).toEqual([
      [3, 'ts', 'run'],
      [9, 'sh', ''],
      [13, 'ts', 'no-typecheck'],
    ]);
    expect(typeCheckedSnippets(snippets).map((s) => s.line)).toEqual([3]);
    expect(runnableSnippets(snippets).map((s) => s.line)).toEqual([3]);
  });

  it('refuses an unlabelled fence, an unknown language, an unknown flag and an indented block', () => {
    expect(() => extractSnippets(md.parse('```\nx\n```\n', {}), 'a.md')).toThrow(
      /a.md:1: code fence without a language/,
    );
    expect(() => extractSnippets(md.parse('```tsx\nx\n```\n', {}), 'a.md')).toThrow(/unknown language "tsx"/);
    expect(() => extractSnippets(md.parse('```sh run\nx\n```\n', {}), 'a.md')).toThrow(FenceError);
    expect(() => extractSnippets(md.parse('para\n\n    indented\n', {}), 'a.md')).toThrow(
      /indented code block/,
    );
  });

  it('the site plugin points guide-file links at the guide pages and fails the page on a bad fence', () => {
    const guides = [
      {
        file: '02-authentication.md',
        order: 2,
        slug: 'authentication',
        title: 'A',
        summary: 's',
        markdown: '',
      },
    ];
    const plugin = sitePlugin(() => guides);
    const tokens: Array<{
      type: string;
      info: string;
      content: string;
      map: [number, number] | null;
      children: unknown[] | null;
    }> = [];
    const rules: Array<(state: unknown) => void> = [];
    plugin({ core: { ruler: { push: (_name, rule) => rules.push(rule as (state: unknown) => void) } } });
    const link = {
      type: 'link_open',
      attrs: { href: '02-authentication.md#scopes' } as Record<string, string>,
      attrGet(name: string) {
        return this.attrs[name] ?? null;
      },
      attrSet(name: string, value: string) {
        this.attrs[name] = value;
      },
    };
    tokens.push({ type: 'inline', info: '', content: '', map: null, children: [link] });
    rules[0]!({ tokens, env: { relativePath: 'x.md' } });
    expect(link.attrs.href).toBe('/authentication.md#scopes');
    link.attrs.href = '07-missing.md';
    expect(() => rules[0]!({ tokens, env: { relativePath: 'x.md' } })).toThrow(/x.md: link to 07-missing.md/);
    expect(() =>
      rules[0]!({
        tokens: [{ type: 'fence', info: '', content: 'x', map: [4, 6], children: null }],
        env: { relativePath: 'y.md' },
      }),
    ).toThrow(/y.md:5: code fence without a language/);
  });
});
