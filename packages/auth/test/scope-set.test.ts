import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../src/errors.js';
import { missingScopes, normalizeScopes, parseScopeString } from '../src/scope-set.js';

describe('scope-set', () => {
  it('sorts and deduplicates', () => {
    expect(normalizeScopes(['read:loans', 'create:repayment', 'read:loans'])).toEqual([
      'create:repayment',
      'read:loans',
    ]);
  });
  it('parses a space-separated scope string, ignoring repeated spaces', () => {
    expect(parseScopeString(' read:loans  create:loan_draft ')).toEqual(['create:loan_draft', 'read:loans']);
    expect(parseScopeString('')).toEqual([]);
  });
  it('refuses a scope with a space or a quote, saying what is allowed', () => {
    expect(() => normalizeScopes(['read loans'])).toThrow(
      'scope "read loans" is not a valid OAuth scope token (RFC 6749 §3.3: printable ASCII without spaces, quotes or backslashes); pass scopes such as "read:loans".',
    );
    expect(() => normalizeScopes(['a"b'])).toThrow(ConfigurationError);
  });
  it('lists the missing scopes', () => {
    expect(missingScopes(['a', 'b', 'c'], ['b'])).toEqual(['a', 'c']);
  });
});
