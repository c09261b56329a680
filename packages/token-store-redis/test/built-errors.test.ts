import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  builtErrorProblems,
  type ErrorCase,
  type ErrorFamily,
  errorClassProblems,
  packageSources,
  strayErrorLines,
} from '../../../test-support/built-errors.js';
import type { RedisTokenStoreErrorCode } from '../src/index.js';
import * as store from '../src/index.js';

// The built package as a user loads it (import and require of dist/): every exported error class keeps its name and code in
// ESM and CJS (a bundler renaming a class, e.g. to `_Name`, shows here), is a RedisTokenStoreError and carries a code of
// RedisTokenStoreErrorCode. Build first. The sources: no class on Error itself but the family's, no TypeError or RangeError
// thrown (a bad option is ERR_INVALID_OPTION).
const packageDir = fileURLToPath(new URL('..', import.meta.url));

/** Every code, once: a code added to the union and not here (or here and not in it) fails the typecheck. */
const codes: Record<RedisTokenStoreErrorCode, true> = {
  ERR_REDIS_UNAVAILABLE: true,
  ERR_REDIS_COMMAND: true,
  ERR_REDIS_AUTH: true,
  ERR_SINGLE_FLIGHT_TIMEOUT: true,
  ERR_REMOTE_FETCH_FAILED: true,
  ERR_REMOTE_THROTTLED: true,
  ERR_INVALID_ENCRYPTION_KEY: true,
  ERR_STORE_CLOSED: true,
  ERR_INVALID_OPTION: true,
};
const family: ErrorFamily = { base: 'RedisTokenStoreError', codes: Object.keys(codes) };

const cases: Record<string, ErrorCase> = {
  RedisTokenStoreError: { args: ['ERR_REDIS_UNAVAILABLE', 'message'], code: 'ERR_REDIS_UNAVAILABLE' },
};
const base = 'src/errors.ts: export class RedisTokenStoreError extends Error {';

describe('the store’s error family', () => {
  it('every exported error class keeps its name and code in the built ESM and CJS', async () => {
    const { checked, problems } = await builtErrorProblems(packageDir, cases, family);
    expect(problems).toEqual([]);
    expect(checked).toHaveLength(2 * Object.keys(cases).length);
  });

  it('a class on plain Error fails it (negative control)', () => {
    class Stray extends Error {}
    const { problems } = errorClassProblems(
      'src',
      { ...store, Stray },
      { ...cases, Stray: { args: ['message'], code: 'ERR_INVALID_OPTION' } },
      family,
    );
    expect(problems).toEqual([
      'src: new Stray(…).name is "Error"',
      'src: new Stray(…).code is undefined, expected ERR_INVALID_OPTION',
      'src: String(new Stray(…)) is "Error: message"',
      'src: new Stray(…) is not a RedisTokenStoreError',
      'src: new Stray(…).code undefined is not a code of RedisTokenStoreError',
    ]);
  });

  it('no source file declares an error class on Error itself, or throws a TypeError or RangeError', () => {
    const sources = packageSources(packageDir);
    expect(strayErrorLines(sources, [base])).toEqual([]);
    // Negative controls: a planted class on Error, and a thrown TypeError, are found.
    expect(
      strayErrorLines(
        {
          ...sources,
          'src/planted.ts':
            "class CommandTimeout extends Error {}\nthrow new TypeError('skipMs must be a finite number > 0');",
        },
        [base],
      ),
    ).toEqual([
      'src/planted.ts:1: class CommandTimeout extends Error {}',
      "src/planted.ts:2: throw new TypeError('skipMs must be a finite number > 0');",
    ]);
  });
});
