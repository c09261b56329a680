import MarkdownIt from 'markdown-it';
import { type FenceLanguage, isFenceLanguage, typeCheckedLanguages } from './languages.js';

/**
 * The info-string flag that exempts one TypeScript block from the type-check, e.g.
 * ```` ```ts no-typecheck ````. Meant for pseudo-code only; every use is listed by the snippet test.
 */
export const noTypecheckFlag = 'no-typecheck';

/**
 * The info-string flag that makes the snippet test also run one TypeScript block, e.g. the quick
 * start's first call: ```` ```ts run ````. It runs in Node against the embedded mock with the
 * `PARTNER_*` environment variables set to one of the mock's demo clients, and must exit with 0.
 */
export const runFlag = 'run';

const flags: readonly string[] = [noTypecheckFlag, runFlag];

/** One fenced code block of a guide. */
export interface Snippet {
  /** The guide's file name, e.g. `01-quick-start.md`. */
  file: string;
  /** 1-based line of the opening fence in the guide. */
  line: number;
  /** 1-based line of the block's first code line in the guide. */
  codeLine: number;
  language: FenceLanguage;
  /** Words after the language in the info string, e.g. `['run']`. */
  flags: readonly string[];
  code: string;
}

export class FenceError extends Error {
  override name = 'FenceError';
}

const parser = new MarkdownIt();

/**
 * Finds every fenced code block of a Markdown document with markdown-it's own parser, so that what
 * is checked is exactly what the site renders (fences in lists and `~~~` fences included).
 * Throws a FenceError for an unlabelled fence, an unknown language or an unknown flag.
 */
export function extractSnippets(markdown: string, file: string): Snippet[] {
  const snippets: Snippet[] = [];
  for (const token of parser.parse(markdown, {})) {
    if (token.type !== 'fence' && token.type !== 'code_block') continue;
    const line = (token.map?.[0] ?? 0) + 1;
    if (token.type === 'code_block') {
      throw new FenceError(
        `${file}:${line}: indented code block; use a fenced block with a language (\`\`\`ts, \`\`\`sh, \`\`\`text…) so it is highlighted and, for TypeScript, type-checked.`,
      );
    }
    const [language = '', ...given] = token.info.trim().split(/\s+/);
    if (!isFenceLanguage(language)) {
      throw new FenceError(
        `${file}:${line}: code fence ${language === '' ? 'without a language' : `with unknown language "${language}"`}; label it with one of the languages in src/build/languages.ts (TypeScript as \`\`\`ts).`,
      );
    }
    for (const flag of given) {
      if (!flags.includes(flag) || !typeCheckedLanguages.includes(language)) {
        throw new FenceError(
          `${file}:${line}: unknown fence flag "${flag}"; the flags are "${noTypecheckFlag}" and "${runFlag}", on TypeScript blocks.`,
        );
      }
    }
    if (given.includes(noTypecheckFlag) && given.includes(runFlag)) {
      throw new FenceError(
        `${file}:${line}: a block that runs is also type-checked; drop "${noTypecheckFlag}".`,
      );
    }
    snippets.push({ file, line, codeLine: line + 1, language, flags: given, code: token.content });
  }
  return snippets;
}

/** The blocks that the snippet test type-checks: TypeScript without the opt-out flag. */
export function typeCheckedSnippets(snippets: readonly Snippet[]): Snippet[] {
  return snippets.filter(
    (snippet) => typeCheckedLanguages.includes(snippet.language) && !snippet.flags.includes(noTypecheckFlag),
  );
}

/** The blocks that the snippet test runs against the mock. */
export function runnableSnippets(snippets: readonly Snippet[]): Snippet[] {
  return snippets.filter((snippet) => snippet.flags.includes(runFlag));
}
