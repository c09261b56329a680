import { describe, expect, it } from 'vitest';
import { createMarkdownRenderer, slugify } from '../../src/build/markdown.js';

const render = createMarkdownRenderer();

describe('createMarkdownRenderer', () => {
  it('highlights fences with highlight.js classes and labels the language', () => {
    const { html } = render('```ts\nconst a: number = 1;\n```\n');
    expect(html).toContain('<pre class="code" data-language="ts"><code class="hljs language-ts">');
    expect(html).toContain('<span class="hljs-keyword">const</span>');
  });

  it('gives h2 and h3 unique ids with a self-link, and reports them', () => {
    const { html, headings } = render(
      '# Title\n\n## Scopes and audience\n\n### Scopes and audience\n\n## `getToken()`\n',
    );
    expect(headings).toEqual([
      { level: 2, id: 'scopes-and-audience', text: 'Scopes and audience' },
      { level: 3, id: 'scopes-and-audience-1', text: 'Scopes and audience' },
      { level: 2, id: 'gettoken', text: 'getToken()' },
    ]);
    expect(html).toContain(
      '<h2 id="scopes-and-audience"><a class="anchor" href="#scopes-and-audience" aria-hidden="true" tabindex="-1">#</a>Scopes and audience</h2>',
    );
    expect(html).toContain('<h1>Title</h1>');
  });

  it('rewrites links to guide sources into links to the built pages and records them with their line', () => {
    const { html, links } = render(
      '# T\n\ntext\n\nSee [auth](02-authentication.md#scopes) and [ref](reference.html#operation/listLoans).\n',
    );
    expect(html).toContain('<a href="authentication.html#scopes">auth</a>');
    expect(links).toEqual([
      { page: 'authentication.html', fragment: 'scopes', line: 5, written: '02-authentication.md#scopes' },
      {
        page: 'reference.html',
        fragment: 'operation/listLoans',
        line: 5,
        written: 'reference.html#operation/listLoans',
      },
    ]);
  });

  it('escapes raw HTML: guides are text, the layout owns the markup', () => {
    expect(render('<script>alert(1)</script>\n').html).toContain('&lt;script&gt;');
  });
});

describe('slugify', () => {
  it('lowercases and joins words with "-", dropping punctuation', () => {
    expect(slugify('Errors: what to do (and why)')).toBe('errors-what-to-do-and-why');
    expect(slugify('read:loans scope')).toBe('readloans-scope');
  });
});

describe('tables', () => {
  it('are wrapped in a box that scrolls on its own when too wide', () => {
    const { html } = render('| a | b |\n|---|---|\n| 1 | 2 |\n');
    expect(html).toMatch(/^<div class="table-wrap"><table>\n<thead>/);
    expect(html.trimEnd()).toMatch(/<\/table><\/div>$/);
  });
});
