// How big the product's files and functions are: no source file of the certification service, the mock
// or the conformance suite over 450 lines, no function over 100 (issue 50). Measured with the TypeScript
// compiler's parser: a function runs from its first token (its doc comment left out) to its closing
// brace, nested functions counted in it too (a one-closure factory is one long function).
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

export const maxFileLines = 450;
export const maxFunctionLines = 100;

/** The product sources checked, relative to the repository's root. */
export const productRoots = [
  'packages/certification-service/src',
  'packages/mock/src',
  'packages/conformance/src',
];

const sourcePattern = /\.(ts|mts|cts|mjs|cjs|js)$/;

/** Every source file under `dir` (declarations and generated files left out). */
export function productFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : productFiles(path);
    return sourcePattern.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The lines of a text (a last line break ends the last line rather than starting another). */
const lineCount = (text) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);

/** A function's name as a reader finds it: its own, or the variable, property or method it is. */
function nameOf(node, file) {
  if (node.name) return node.name.getText(file);
  const parent = node.parent;
  if (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) && parent.name)
    return parent.name.getText(file);
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  return `(anonymous, line ${file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1})`;
}

/**
 * What is too long in one file (`path` names it in the findings): the file itself, as `path (N lines)`,
 * and each function, as `path: name (N lines)`.
 */
export function oversized(path, text) {
  const found = [];
  const lines = lineCount(text);
  if (lines > maxFileLines) found.push(`${path} (${lines} lines)`);
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    if (ts.isFunctionLike(node) && node.body) {
      const first = file.getLineAndCharacterOfPosition(node.getStart(file)).line;
      const last = file.getLineAndCharacterOfPosition(node.end).line;
      const length = last - first + 1;
      if (length > maxFunctionLines) found.push(`${path}: ${nameOf(node, file)} (${length} lines)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

/** What is too long under the product roots of the repository at `root`. */
export function oversizedProduct(root) {
  return productRoots.flatMap((dir) =>
    productFiles(join(root, dir)).flatMap((path) =>
      oversized(relative(root, path), readFileSync(path, 'utf8')),
    ),
  );
}
