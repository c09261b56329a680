import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  builtErrorProblems,
  type ErrorCase,
  type ErrorFamily,
  errorClassProblems,
  packageSources,
  plainErrorLines,
  strayErrorLines,
} from '../../../test-support/built-errors.js';
import type { ConformanceErrorCode } from '../src/index.js';
import * as conformance from '../src/index.js';

// The built package as a user loads it (import and require of dist/): every exported error class keeps its name and code in
// ESM and CJS (a bundler renaming a class, e.g. to `_Name`, shows here), is a ConformanceError and carries a code of
// ConformanceErrorCode. Build first. The sources: no class on Error itself, no TypeError or RangeError thrown.
const packageDir = fileURLToPath(new URL('..', import.meta.url));

/** Every code, once: a code added to the union and not here (or here and not in it) fails the typecheck. */
const codes: Record<ConformanceErrorCode, true> = {
  ERR_USAGE: true,
  ERR_CREDENTIALS: true,
  ERR_PREFLIGHT: true,
  ERR_UNREACHABLE: true,
  ERR_NETWORK: true,
  ERR_REPORT: true,
  ERR_SERVICE: true,
  ERR_WRITE_GUARD: true,
  ERR_TOKEN_NOT_JWS: true,
};
const family: ErrorFamily = { base: 'ConformanceError', codes: Object.keys(codes) };

const cases: Record<string, ErrorCase> = {
  ConformanceError: { args: ['ERR_UNREACHABLE', 'message'], code: 'ERR_UNREACHABLE' },
  UsageError: { args: ['message'], code: 'ERR_USAGE' },
};
const base = 'src/errors.ts: export class ConformanceError extends Error {';

describe('the suite’s error family', () => {
  it('every exported error class keeps its name and code in the built ESM and CJS', async () => {
    const { checked, problems } = await builtErrorProblems(packageDir, cases, family);
    expect(problems).toEqual([]);
    expect(checked).toHaveLength(2 * Object.keys(cases).length);
  });

  it('a class on plain Error fails it (negative control)', () => {
    class Stray extends Error {}
    const { problems } = errorClassProblems(
      'src',
      { ...conformance, Stray },
      { ...cases, Stray: { args: ['message'], code: 'ERR_USAGE' } },
      family,
    );
    expect(problems).toEqual([
      'src: new Stray(…).name is "Error"',
      'src: new Stray(…).code is undefined, expected ERR_USAGE',
      'src: String(new Stray(…)) is "Error: message"',
      'src: new Stray(…) is not a ConformanceError',
      'src: new Stray(…).code undefined is not a code of ConformanceError',
    ]);
  });

  it('no source file declares an error class on Error itself, or throws an Error, TypeError or RangeError', () => {
    const sources = packageSources(packageDir);
    expect(strayErrorLines(sources, [base])).toEqual([]);
    // Nor a plain Error: every error the package throws is of its family.
    expect(plainErrorLines(sources)).toEqual([]);
    expect(plainErrorLines({ 'src/planted.ts': "throw new Error('x');" })).toEqual(['src/planted.ts:1']);
    // Negative control: a planted TypeError is found.
    const planted = { ...sources, 'src/planted.ts': "throw new TypeError('not a JWKS');" };
    expect(strayErrorLines(planted, [base])).toEqual([
      "src/planted.ts:1: throw new TypeError('not a JWKS');",
    ]);
  });
});
