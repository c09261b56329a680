import { describe, expect, it } from 'vitest';
import {
  extractSnippets,
  FenceError,
  runnableSnippets,
  typeCheckedSnippets,
} from '../../src/build/snippets.js';

const guide = [
  '# Title', // 1
  '', // 2
  '```ts', // 3
  'const a = 1;', // 4
  '```', // 5
  '', // 6
  '- a list item', // 7
  '', // 8
  '  ~~~sh', // 9
  '  npm install x', // 10
  '  ~~~', // 11
  '', // 12
  '```ts no-typecheck', // 13
  'pseudo code', // 14
  '```', // 15
].join('\n');

describe('extractSnippets', () => {
  it('finds every fence with its language, flags and guide line, nested ones included', () => {
    const snippets = extractSnippets(guide, '01-x.md');
    expect(
      snippets.map(({ line, codeLine, language, flags, code }) => ({
        line,
        codeLine,
        language,
        flags,
        code,
      })),
    ).toEqual([
      { line: 3, codeLine: 4, language: 'ts', flags: [], code: 'const a = 1;\n' },
      { line: 9, codeLine: 10, language: 'sh', flags: [], code: 'npm install x\n' },
      { line: 13, codeLine: 14, language: 'ts', flags: ['no-typecheck'], code: 'pseudo code\n' },
    ]);
  });

  it('type-checks TypeScript blocks except the ones flagged no-typecheck', () => {
    expect(typeCheckedSnippets(extractSnippets(guide, '01-x.md')).map((s) => s.line)).toEqual([3]);
  });

  it('runs only the blocks flagged run', () => {
    const snippets = extractSnippets('```ts run\nconsole.log(1);\n```\n\n```ts\nconst b = 2;\n```\n', 'a.md');
    expect(runnableSnippets(snippets).map((s) => s.line)).toEqual([1]);
    expect(typeCheckedSnippets(snippets).map((s) => s.line)).toEqual([1, 5]);
  });

  it('refuses an unlabelled fence, naming the guide and line', () => {
    expect(() => extractSnippets('# T\n\ntext\n\n```\nconst a = 1;\n```\n', '02-y.md')).toThrow(
      new FenceError(
        '02-y.md:5: code fence without a language; label it with one of the languages in src/build/languages.ts (TypeScript as ```ts).',
      ),
    );
  });

  it('refuses an unknown language, so a misspelt TypeScript block cannot skip the check', () => {
    expect(() => extractSnippets('```tsx\nconst a = 1;\n```\n', '02-y.md')).toThrow(
      '02-y.md:1: code fence with unknown language "tsx"',
    );
  });

  it('refuses an unknown flag and the opt-out on a non-TypeScript block', () => {
    expect(() => extractSnippets('```ts nocheck\nx\n```\n', 'a.md')).toThrow(
      'a.md:1: unknown fence flag "nocheck"; the flags are "no-typecheck" and "run", on TypeScript blocks.',
    );
    expect(() => extractSnippets('```sh no-typecheck\nx\n```\n', 'a.md')).toThrow(
      'unknown fence flag "no-typecheck"',
    );
  });

  it('refuses indented code blocks, which carry no language', () => {
    expect(() => extractSnippets('# T\n\n    const a = 1;\n', 'a.md')).toThrow('a.md:3: indented code block');
  });
});
