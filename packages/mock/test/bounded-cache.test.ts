import { describe, expect, it } from 'vitest';
import { BoundedCache } from '../src/bounded-cache.js';

describe('bounded-cache', () => {
  it('keeps at most its capacity, dropping the oldest inserted first', () => {
    const cache = new BoundedCache<string, number>(2);
    cache.set('a', 1);
    cache.set('b', 2);
    cache.set('a', 3); // re-inserted: now the newest
    cache.set('c', 4);
    expect([cache.get('a'), cache.get('b'), cache.get('c'), cache.size]).toEqual([3, undefined, 4, 2]);
  });

  it('forgets the last key found once it is dropped', () => {
    const cache = new BoundedCache<string, number>(1);
    cache.set('a', 1);
    expect(cache.get(['a'].join(''))).toBe(1); // an equal string, not the same object
    cache.set('b', 2); // drops a
    expect([cache.get('a'), cache.get('b')]).toEqual([undefined, 2]);
    cache.set('b', 3);
    expect(cache.get('b')).toBe(3);
  });
});
