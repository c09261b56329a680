import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { builtErrorProblems, type ErrorCase } from '../../../test-support/built-errors.js';

// The built package as a user loads it (import and require of dist/): every exported error class keeps its name and code in
// ESM and CJS (a bundler renaming a class, e.g. to `_Name`, shows here). Build first.
const packageDir = fileURLToPath(new URL('..', import.meta.url));

const cases: Record<string, ErrorCase> = {
  ConformanceError: { args: ['ERR_USAGE', 'message'], code: 'ERR_USAGE' },
};

it('every exported error class keeps its name and code in the built ESM and CJS', async () => {
  const { checked, problems } = await builtErrorProblems(packageDir, cases);
  expect(problems).toEqual([]);
  expect(checked).toHaveLength(2 * Object.keys(cases).length);
});
