import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import http from 'highlight.js/lib/languages/http';
import ini from 'highlight.js/lib/languages/ini';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import plaintext from 'highlight.js/lib/languages/plaintext';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';

/**
 * The code-fence languages a guide may use. A fence must name one of them: an unlabelled or unknown
 * fence fails the build, so a TypeScript block cannot escape the snippet type-check by a missing or
 * misspelled label.
 */
export const fenceLanguages = {
  ts: 'typescript',
  typescript: 'typescript',
  js: 'javascript',
  javascript: 'javascript',
  sh: 'bash',
  bash: 'bash',
  shell: 'bash',
  console: 'bash',
  json: 'json',
  yaml: 'yaml',
  yml: 'yaml',
  http: 'http',
  xml: 'xml',
  html: 'xml',
  ini: 'ini',
  dotenv: 'ini',
  text: 'plaintext',
} as const;

export type FenceLanguage = keyof typeof fenceLanguages;

/** Fence languages whose blocks are extracted and type-checked against the workspace packages. */
export const typeCheckedLanguages: readonly FenceLanguage[] = ['ts', 'typescript'];

export function isFenceLanguage(value: string): value is FenceLanguage {
  return Object.hasOwn(fenceLanguages, value);
}

// Only the grammars the guides use are registered: the core build keeps the highlighter small and
// makes an unexpected language an error instead of a guess.
hljs.registerLanguage('typescript', typescript);
hljs.registerLanguage('javascript', javascript);
hljs.registerLanguage('bash', bash);
hljs.registerLanguage('json', json);
hljs.registerLanguage('yaml', yaml);
hljs.registerLanguage('http', http);
hljs.registerLanguage('xml', xml);
hljs.registerLanguage('ini', ini);
hljs.registerLanguage('plaintext', plaintext);

/** Highlights `code` as HTML (escaped) with highlight.js classes. */
export function highlight(code: string, language: FenceLanguage): string {
  return hljs.highlight(code, { language: fenceLanguages[language], ignoreIllegals: true }).value;
}
