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
});
