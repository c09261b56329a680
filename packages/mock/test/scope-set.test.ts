import { describe, expect, it } from 'vitest';
import { intersectScopes, knownScopes, parseScopeString, scopesOfClaim } from '../src/scope-set.js';

describe('scope-set', () => {
  it('splits a scope string on spaces, drops duplicates, and refuses characters outside RFC 6749 §3.3', () => {
    expect(parseScopeString('read:loans  create:repayment read:loans')).toEqual([
      'read:loans',
      'create:repayment',
    ]);
    expect(parseScopeString('')).toEqual([]);
    expect(parseScopeString('read:loans "x"')).toBeUndefined();
    expect(parseScopeString('read:loans\\x')).toBeUndefined();
    expect(parseScopeString('read:loans\tx')).toBeUndefined();
  });

  it('intersects in spec order and drops unknown values', () => {
    expect(
      intersectScopes(['create:repayment', 'made:up', 'read:loans'], ['read:loans', 'create:repayment']),
    ).toEqual(['read:loans', 'create:repayment']);
    expect(intersectScopes(['made:up'], ['made:up'])).toEqual([]);
    expect(knownScopes(['create:loan_draft', 'x', 'read:loans'])).toEqual([
      'read:loans',
      'create:loan_draft',
    ]);
  });

  it('reads the scope claim as an array or a space-separated string', () => {
    expect(scopesOfClaim(['read:loans'])).toEqual(['read:loans']);
    expect(scopesOfClaim('read:loans create:repayment')).toEqual(['read:loans', 'create:repayment']);
    expect(scopesOfClaim([1])).toBeUndefined();
    expect(scopesOfClaim({})).toBeUndefined();
  });
});
