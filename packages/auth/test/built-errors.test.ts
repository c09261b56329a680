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
import type { PartnerApiErrorCode } from '../src/index.js';
import * as auth from '../src/index.js';

// The built package as a user loads it (import and require of dist/): every exported error class keeps its name and code in
// ESM and CJS (a bundler renaming a class, e.g. to `_Name`, shows here), is a PartnerApiError (the family's root, shared with
// the SDK) and carries a code of PartnerApiErrorCode. Build first. The sources: no class on Error itself but the root, no
// TypeError or RangeError thrown (a bad option is a ConfigurationError).
const packageDir = fileURLToPath(new URL('..', import.meta.url));

/** Every code, once: a code added to the union and not here (or here and not in it) fails the typecheck. */
const codes: Record<PartnerApiErrorCode, true> = {
  ERR_TOKEN_REQUEST: true,
  ERR_NOT_APPROVED_FOR_PRODUCTION: true,
  ERR_TOKEN_RESPONSE: true,
  ERR_TOKEN_NETWORK: true,
  ERR_TOKEN_THROTTLED: true,
  ERR_TOKEN_ABORTED: true,
  ERR_TOKEN_TIMEOUT: true,
  ERR_SCOPE_NOT_GRANTED: true,
  ERR_BEARER_INSUFFICIENT_SCOPE: true,
  ERR_INSECURE_TOKEN_URL: true,
  ERR_CONFIGURATION: true,
  ERR_RESPONSE_SHAPE: true,
  ERR_API_STATUS: true,
  ERR_BAD_REQUEST: true,
  ERR_AUTHENTICATION: true,
  ERR_PERMISSION_DENIED: true,
  ERR_INSUFFICIENT_SCOPE: true,
  ERR_NOT_FOUND: true,
  ERR_CONFLICT: true,
  ERR_UNPROCESSABLE_ENTITY: true,
  ERR_RATE_LIMIT: true,
  ERR_INTERNAL_SERVER: true,
  ERR_CONNECTION: true,
  ERR_REDIRECT: true,
  ERR_TIMEOUT: true,
  ERR_USER_ABORT: true,
};
const family: ErrorFamily = { base: 'PartnerApiError', codes: Object.keys(codes) };

const cases: Record<string, ErrorCase> = {
  PartnerApiError: { args: ['message', 'ERR_CONFIGURATION'], code: 'ERR_CONFIGURATION' },
  ConfigurationError: { args: ['message'], code: 'ERR_CONFIGURATION' },
  PartnerAuthError: { args: ['ERR_TOKEN_NETWORK', 'message'], code: 'ERR_TOKEN_NETWORK' },
  TokenRequestError: {
    args: ['message', { status: 400, error: 'invalid_client' }],
    code: 'ERR_TOKEN_REQUEST',
  },
  NotApprovedForProductionError: {
    args: ['message', { status: 400, error: 'unauthorized_client' }],
    code: 'ERR_NOT_APPROVED_FOR_PRODUCTION',
  },
  TokenResponseError: { args: ['message'], code: 'ERR_TOKEN_RESPONSE' },
  TokenNetworkError: { args: ['message'], code: 'ERR_TOKEN_NETWORK' },
  TokenThrottledError: { args: ['message', 1000], code: 'ERR_TOKEN_THROTTLED' },
  TokenAbortedError: { args: [new Error('aborted')], code: 'ERR_TOKEN_ABORTED' },
  TokenTimeoutError: { args: [1000], code: 'ERR_TOKEN_TIMEOUT' },
  ScopeNotGrantedError: { args: [['create:repayment'], ['read:loans']], code: 'ERR_SCOPE_NOT_GRANTED' },
  BearerInsufficientScopeError: { args: ['read:loans'], code: 'ERR_BEARER_INSUFFICIENT_SCOPE' },
  InsecureTokenUrlError: { args: ['message'], code: 'ERR_INSECURE_TOKEN_URL' },
};
const root = 'src/errors.ts: export class PartnerApiError extends Error {';

describe('the auth package’s error family', () => {
  it('every exported error class keeps its name and code in the built ESM and CJS', async () => {
    const { checked, problems } = await builtErrorProblems(packageDir, cases, family);
    expect(problems).toEqual([]);
    expect(checked).toHaveLength(2 * Object.keys(cases).length);
  });

  it('a class on plain Error fails it (negative control)', () => {
    class Stray extends Error {}
    const { problems } = errorClassProblems(
      'src',
      { ...auth, Stray },
      { ...cases, Stray: { args: ['message'], code: 'ERR_CONFIGURATION' } },
      family,
    );
    expect(problems).toEqual([
      'src: new Stray(…).name is "Error"',
      'src: new Stray(…).code is undefined, expected ERR_CONFIGURATION',
      'src: String(new Stray(…)) is "Error: message"',
      'src: new Stray(…) is not a PartnerApiError',
      'src: new Stray(…).code undefined is not a code of PartnerApiError',
    ]);
  });

  it('no source file declares an error class on Error itself, or throws an Error, TypeError or RangeError', () => {
    const sources = packageSources(packageDir);
    expect(strayErrorLines(sources, [root])).toEqual([]);
    // Nor a plain Error: every error the package throws is of its family.
    expect(plainErrorLines(sources)).toEqual([]);
    expect(plainErrorLines({ 'src/planted.ts': "throw new Error('x');" })).toEqual(['src/planted.ts:1']);
    // Negative controls: a planted class on Error, and a thrown TypeError, are found.
    expect(
      strayErrorLines(
        {
          ...sources,
          'src/planted.ts': "class Stray extends Error {}\nthrow new TypeError('clientId must be a string');",
        },
        [root],
      ),
    ).toEqual([
      'src/planted.ts:1: class Stray extends Error {}',
      "src/planted.ts:2: throw new TypeError('clientId must be a string');",
    ]);
  });
});
