// No product file over 450 lines and no function over 100 in the certification service, the mock and the
// conformance suite (issue 50): a newcomer reads a file in one sitting and a function on one screen or
// two. Measured by scripts/sizes.mjs with TypeScript's parser; a finding names the file, the function
// and its length.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  maxFileLines,
  maxFunctionLines,
  oversized,
  oversizedProduct,
  productFiles,
  productRoots,
} from '../sizes.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * What is still too long, each to be split by the team that owns its file: the list only shrinks, and
 * it is empty now (issue 50's were all split). A file or function not named here fails the test; one
 * named here that is no longer too long fails it too, until it is struck off.
 */
const notYetSplit = [];

/** A finding without its length: `path` or `path: name`. */
const named = (finding) => finding.replace(/ \(\d+ lines\)$/, '');

const lines = (count, line = (n) => `// line ${n}`) => Array.from({ length: count }, (_, n) => line(n + 1));
/** A function of `count` lines, its first and last lines included. */
const functionOf = (head, count) => [`${head} {`, ...lines(count - 2, () => '  work();'), '}'];

describe('no product file over 450 lines, no function over 100', () => {
  it('finds nothing too long but what is still to be split', () => {
    // Not vacuous: every product root is read, and each holds the files a package is made of.
    for (const dir of productRoots) expect(productFiles(join(root, dir)).length, dir).toBeGreaterThan(20);
    const found = oversizedProduct(root);
    const fresh = found.filter((finding) => !notYetSplit.includes(named(finding)));
    expect(fresh, 'split these (scripts/test/sizes.test.mjs):').toEqual([]);
    const split = notYetSplit.filter((name) => !found.some((finding) => named(finding) === name));
    expect(split, 'no longer too long: strike them off notYetSplit').toEqual([]);
  });

  it('names a file over 450 lines and a function over 100 (negative control)', () => {
    expect(maxFileLines).toBe(450);
    expect(maxFunctionLines).toBe(100);
    expect(oversized('a.ts', `${lines(451).join('\n')}\n`)).toEqual(['a.ts (451 lines)']);
    expect(oversized('a.ts', `${lines(450).join('\n')}\n`)).toEqual([]);
    const text = [
      '/** Its doc comment is not counted. */',
      ...functionOf('export function tall()', 101),
      ...functionOf('function fits()', 100),
      ...functionOf('const arrow = () =>', 101),
      'class Store {',
      ...functionOf('  method()', 101),
      '}',
      'export const factory = () => ({',
      ...functionOf('  inner: () =>', 101),
      '});',
    ].join('\n');
    expect(oversized('src/b.ts', text)).toEqual([
      'src/b.ts (509 lines)',
      'src/b.ts: tall (101 lines)',
      'src/b.ts: arrow (101 lines)',
      'src/b.ts: method (101 lines)',
      'src/b.ts: factory (103 lines)',
      'src/b.ts: inner (101 lines)',
    ]);
  });
});
