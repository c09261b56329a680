import { scopes } from '@partner-lending/spec';
import { describe, expect, it } from 'vitest';
import {
  formatScopes,
  intersect,
  nonEmptySubsets,
  parseScopeList,
  sameSet,
} from '../../src/common/scope-set.js';

describe('scope-set', () => {
  it('lists the 15 non-empty subsets of the four scopes, each once', () => {
    const subsets = nonEmptySubsets(scopes);
    expect(subsets).toHaveLength(15);
    expect(new Set(subsets.map((s) => s.join(' '))).size).toBe(15);
    expect(subsets[0]).toEqual(['read:loans']);
    expect(subsets.at(-1)).toEqual([...scopes]);
  });

  it('intersects in spec order and compares as sets', () => {
    expect(intersect(['create:repayment', 'read:loans', 'x'], [...scopes])).toEqual([
      'read:loans',
      'create:repayment',
    ]);
    expect(sameSet(['a', 'b'], ['b', 'a', 'a'])).toBe(true);
    expect(sameSet(['a'], ['a', 'b'])).toBe(false);
    expect(formatScopes([])).toBe('{}');
  });

  it('reads --expect-scopes separated by spaces or commas', () => {
    expect(parseScopeList(' read:loans,create:loan_draft  read:loans ')).toEqual([
      'read:loans',
      'create:loan_draft',
    ]);
  });
});
