/**
 * The code-fence languages a page may use. A fence must name one of them: an unlabelled or unknown
 * fence fails the build, so a TypeScript block cannot escape the snippet type-check by a missing or
 * misspelt label. (Shiki, VitePress's highlighter, knows every one of them.)
 */
export const fenceLanguages = [
  'ts',
  'typescript',
  'js',
  'javascript',
  'sh',
  'bash',
  'shell',
  'console',
  'json',
  'yaml',
  'yml',
  'http',
  'xml',
  'html',
  'ini',
  'dotenv',
  'text',
  'vue',
] as const;

export type FenceLanguage = (typeof fenceLanguages)[number];

/** Fence languages whose blocks are extracted and type-checked against the workspace packages. */
export const typeCheckedLanguages: readonly FenceLanguage[] = ['ts', 'typescript'];

/**
 * The info-string flag that exempts one TypeScript block from the type-check (```` ```ts no-typecheck ````).
 * Meant for pseudo-code only; every use is listed by the snippet test.
 */
export const noTypecheckFlag = 'no-typecheck';

/**
 * The info-string flag that makes the snippet test also run one TypeScript block (```` ```ts run ````),
 * in Node against the embedded mock with the `PARTNER_*` variables set to a demo client.
 */
export const runFlag = 'run';

const flags: readonly string[] = [noTypecheckFlag, runFlag];

export function isFenceLanguage(value: string): value is FenceLanguage {
  return (fenceLanguages as readonly string[]).includes(value);
}

export class FenceError extends Error {
  override name = 'FenceError';
}

/** One fenced code block of a page. */
export interface Snippet {
  /** The file name, e.g. `01-quick-start.md`. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** 1-based line of the block's first code line. */
  codeLine: number;
  language: FenceLanguage;
  /** Words after the language in the info string, e.g. `['run']`. */
  flags: readonly string[];
  code: string;
}

/** The parts of a markdown-it token this module reads (so it takes VitePress's parser's tokens). */
export interface FenceToken {
  type: string;
  info: string;
  content: string;
  map: [number, number] | null;
}

/**
 * Checks one fence token and returns it as a snippet. Throws a FenceError, naming file and line, for
 * an indented code block, an unlabelled fence, an unknown language or an unknown flag.
 */
export function checkFence(token: FenceToken, file: string): Snippet {
  const line = (token.map?.[0] ?? 0) + 1;
  if (token.type === 'code_block') {
    throw new FenceError(
      `${file}:${line}: indented code block; use a fenced block with a language (\`\`\`ts, \`\`\`sh, \`\`\`text…) so it is highlighted and, for TypeScript, type-checked.`,
    );
  }
  const [language = '', ...given] = token.info.trim().split(/\s+/);
  if (!isFenceLanguage(language)) {
    throw new FenceError(
      `${file}:${line}: code fence ${language === '' ? 'without a language' : `with unknown language "${language}"`}; label it with one of: ${fenceLanguages.join(', ')} (TypeScript as \`\`\`ts).`,
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
  return { file, line, codeLine: line + 1, language, flags: given, code: token.content };
}

/** Every fenced block of a document, from the tokens of the site's own Markdown parser. */
export function extractSnippets(tokens: readonly FenceToken[], file: string): Snippet[] {
  return tokens
    .filter((token) => token.type === 'fence' || token.type === 'code_block')
    .map((token) => checkFence(token, file));
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
