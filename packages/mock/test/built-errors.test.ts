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
import type { MockErrorCode } from '../src/index.js';
import * as mock from '../src/index.js';

// The built package as a user loads it (import and require of dist/): every exported error class keeps its name and code in
// ESM and CJS (a bundler renaming a class, e.g. to `_Name`, shows here), is a MockError and carries a code of MockErrorCode.
// Build first. The sources: no class on Error itself, no TypeError or RangeError thrown.
const packageDir = fileURLToPath(new URL('..', import.meta.url));

/** Every code, once: a code added to the union and not here (or here and not in it) fails the typecheck. */
const codes: Record<MockErrorCode, true> = {
  ERR_MOCK_OPTIONS: true,
  ERR_MOCK_CLIENTS: true,
  ERR_MOCK_FAULT: true,
  ERR_MOCK_LISTEN: true,
  ERR_MOCK_REGISTER_STATE: true,
  ERR_MOCK_EVIDENCE_SPOOL: true,
  ERR_MOCK_USAGE: true,
  ERR_MOCK_REGISTER: true,
  ERR_MOCK_INJECTED_CRASH: true,
};
const family: ErrorFamily = { base: 'MockError', codes: Object.keys(codes) };

const cases: Record<string, ErrorCase> = {
  MockError: { args: ['ERR_MOCK_USAGE', 'message'], code: 'ERR_MOCK_USAGE' },
  RegisterFailure: { args: ['message'], code: 'ERR_MOCK_REGISTER' },
  InjectedCrash: { args: ['message'], code: 'ERR_MOCK_INJECTED_CRASH' },
};
const base = 'src/errors.ts: export class MockError extends Error {';

describe('the mock’s error family', () => {
  it('every exported error class keeps its name and code in the built ESM and CJS', async () => {
    const { checked, problems } = await builtErrorProblems(packageDir, cases, family);
    expect(problems).toEqual([]);
    expect(checked).toHaveLength(2 * Object.keys(cases).length);
  });

  it('a class on plain Error fails it (negative control)', () => {
    class Stray extends Error {}
    const { problems } = errorClassProblems(
      'src',
      { ...mock, Stray },
      { ...cases, Stray: { args: ['message'], code: 'ERR_MOCK_USAGE' } },
      family,
    );
    expect(problems).toEqual([
      'src: new Stray(…).name is "Error"',
      'src: new Stray(…).code is undefined, expected ERR_MOCK_USAGE',
      'src: String(new Stray(…)) is "Error: message"',
      'src: new Stray(…) is not a MockError',
      'src: new Stray(…).code undefined is not a code of MockError',
    ]);
  });

  it('no source file declares an error class on Error itself, or throws an Error, TypeError or RangeError', () => {
    const sources = packageSources(packageDir);
    expect(strayErrorLines(sources, [base])).toEqual([]);
    // Nor a plain Error: every error the package throws is of its family.
    expect(plainErrorLines(sources)).toEqual([]);
    expect(plainErrorLines({ 'src/planted.ts': "throw new Error('x');" })).toEqual(['src/planted.ts:1']);
    // Negative control: a planted class on Error is found.
    expect(strayErrorLines({ ...sources, 'src/planted.ts': 'class Stray extends Error {}' }, [base])).toEqual(
      ['src/planted.ts:1: class Stray extends Error {}'],
    );
  });
});
