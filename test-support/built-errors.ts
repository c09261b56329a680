import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { sourceFiles } from './layers.js';

/** How to make one exported error class, and the `code` the instance must carry. */
export interface ErrorCase {
  args: unknown[];
  code: string;
}

/** A package's error family: the exported base class every error class extends, and its codes. */
export interface ErrorFamily {
  base: string;
  codes: readonly string[];
}

type Entry = string | { default?: string } | undefined;
const fileOf = (entry: Entry): string | undefined => (typeof entry === 'string' ? entry : entry?.default);

const isErrorClass = (value: unknown): value is new (...args: unknown[]) => Error =>
  typeof value === 'function' && value.prototype instanceof Error;

/**
 * Loads a package's built main entry as a user does — `import` (ESM) and `require` (CJS), the files its
 * package.json `exports["."]` names — and checks every exported error class in both: the class's `name`
 * is its exported name, and an instance made with the case's arguments has that `name`, the case's
 * `code`, is an `Error`, and prints as `Name: message`. Returns what is wrong (empty: all good), and
 * names an exported error class `cases` lacks or a case the package does not export. With `family`, each
 * instance must also be an instance of the family's base class and carry one of its codes.
 */
export async function builtErrorProblems(
  packageDir: string,
  cases: Record<string, ErrorCase>,
  family?: ErrorFamily,
): Promise<{ checked: string[]; problems: string[] }> {
  const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as {
    exports: Record<string, { import?: Entry; require?: Entry }>;
  };
  const main = manifest.exports['.'];
  const esmFile = fileOf(main?.import);
  const cjsFile = fileOf(main?.require);
  if (!esmFile || !cjsFile)
    return { checked: [], problems: ['package.json exports["."] lacks import or require'] };
  const formats: Array<[string, Record<string, unknown>]> = [
    ['ESM', (await import(pathToFileURL(join(packageDir, esmFile)).href)) as Record<string, unknown>],
    [
      'CJS',
      createRequire(join(packageDir, 'package.json'))(join(packageDir, cjsFile)) as Record<string, unknown>,
    ],
  ];
  const problems: string[] = [];
  const checked: string[] = [];
  for (const [format, module] of formats) {
    const found = errorClassProblems(format, module, cases, family);
    problems.push(...found.problems);
    checked.push(...found.checked);
  }
  return { checked, problems };
}

/**
 * The checks of `builtErrorProblems` on one loaded module (`format` names it in the problems): every
 * exported error class is in `cases`, keeps its name, and an instance has that `name`, the case's `code`,
 * prints as `Name: message`, and — with `family` — is an instance of the base with a code of the family.
 */
export function errorClassProblems(
  format: string,
  module: Record<string, unknown>,
  cases: Record<string, ErrorCase>,
  family?: ErrorFamily,
): { checked: string[]; problems: string[] } {
  const problems: string[] = [];
  const checked: string[] = [];
  const Base = family === undefined ? undefined : module[family.base];
  if (family !== undefined && !isErrorClass(Base))
    problems.push(`${format}: the family's base ${family.base} is not an exported error class`);
  const exported = Object.keys(module).filter((key) => isErrorClass(module[key]));
  for (const name of exported)
    if (!(name in cases))
      problems.push(`${format}: ${name} is exported, and not in this test's cases: add it`);
  for (const [name, { args, code }] of Object.entries(cases)) {
    const Class = module[name];
    if (!isErrorClass(Class)) {
      problems.push(`${format}: ${name} is not an exported error class`);
      continue;
    }
    if (Class.name !== name) problems.push(`${format}: ${name}.name is ${JSON.stringify(Class.name)}`);
    const error = new Class(...args) as Error & { code?: unknown };
    if (error.name !== name) problems.push(`${format}: new ${name}(…).name is ${JSON.stringify(error.name)}`);
    if (error.code !== code)
      problems.push(`${format}: new ${name}(…).code is ${JSON.stringify(error.code)}, expected ${code}`);
    if (!(error instanceof Error)) problems.push(`${format}: new ${name}(…) is not an Error`);
    if (!String(error).startsWith(`${name}: `))
      problems.push(`${format}: String(new ${name}(…)) is ${JSON.stringify(String(error).slice(0, 80))}`);
    if (family !== undefined && isErrorClass(Base)) {
      if (!(error instanceof Base)) problems.push(`${format}: new ${name}(…) is not a ${family.base}`);
      if (!family.codes.includes(error.code as string))
        problems.push(
          `${format}: new ${name}(…).code ${JSON.stringify(error.code)} is not a code of ${family.base}`,
        );
    }
    checked.push(`${format} ${name}`);
  }
  return { checked, problems };
}

/**
 * Lines of a package's sources that step out of its error family: a class extending `Error`,
 * `TypeError` or `RangeError` directly, or a `TypeError`/`RangeError` thrown. `files` maps a file's
 * name to its text; the base class's own `extends Error` is allowed by `allowed`: a file's name (all of
 * it), or `file: line` with the line's trimmed text. Each is returned as `file:number: line`.
 */
export function strayErrorLines(files: Record<string, string>, allowed: readonly string[] = []): string[] {
  const stray: string[] = [];
  for (const [file, text] of Object.entries(files))
    text.split('\n').forEach((line, index) => {
      if (!/\bextends (Error|TypeError|RangeError)\b|\bnew (TypeError|RangeError)\(/.test(line)) return;
      if (/^\s*(\/\/|\*)/.test(line)) return;
      if (allowed.some((allow) => allow === file || allow === `${file}: ${line.trim()}`)) return;
      stray.push(`${file}:${index + 1}: ${line.trim()}`);
    });
  return stray;
}

/** A package's sources, for `strayErrorLines`: each file under `<packageDir>/src` by its path from `packageDir`. */
export function packageSources(packageDir: string): Record<string, string> {
  return Object.fromEntries(
    sourceFiles(join(packageDir, 'src')).map((file) => [
      relative(packageDir, file),
      readFileSync(file, 'utf8'),
    ]),
  );
}

/** Lines of `files` that throw a plain `new Error(` (outside a package's family), as `file:number`. */
export function plainErrorLines(files: Record<string, string>): string[] {
  return Object.entries(files).flatMap(([file, text]) =>
    text.split('\n').flatMap((line, index) => (/\bnew Error\(/.test(line) ? [`${file}:${index + 1}`] : [])),
  );
}
