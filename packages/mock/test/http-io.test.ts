import { describe, expect, it } from 'vitest';
import { exceedsJsonDepth, jsonDepthLimit, splitTarget } from '../src/http-io.js';

describe('http-io: exceedsJsonDepth', () => {
  it('counts object and array nesting, not brackets inside strings', () => {
    expect(exceedsJsonDepth('{"a":[1,{"b":2}]}', 3)).toBe(false);
    expect(exceedsJsonDepth('{"a":[1,{"b":2}]}', 2)).toBe(true);
    expect(exceedsJsonDepth('{"a":"[[[[[{{{{"}', 1)).toBe(false);
    expect(exceedsJsonDepth('{"a":"\\\\"}', 1)).toBe(false);
    expect(exceedsJsonDepth('{"a":"\\"[[[["}', 1)).toBe(false);
    expect(exceedsJsonDepth('[[]]', 1)).toBe(true);
    expect(exceedsJsonDepth('', 0)).toBe(false);
  });

  it(`agrees with the real depth of what JSON.parse builds, at and around ${jsonDepthLimit}`, () => {
    for (const depth of [jsonDepthLimit - 1, jsonDepthLimit, jsonDepthLimit + 1]) {
      const text = `${'{"k":'.repeat(depth - 1)}[1]${'}'.repeat(depth - 1)}`;
      const real = (value: unknown): number =>
        typeof value === 'object' && value !== null ? 1 + Math.max(0, ...Object.values(value).map(real)) : 0;
      expect(exceedsJsonDepth(text, jsonDepthLimit)).toBe(real(JSON.parse(text)) > jsonDepthLimit);
    }
  });
});

describe('http-io: splitTarget', () => {
  it('splits origin-form targets and refuses the others', () => {
    expect(splitTarget('/a?b=1')).toEqual({ pathname: '/a', query: 'b=1' });
    expect(splitTarget('http://x/a')).toBeUndefined();
    expect(splitTarget('*')).toBeUndefined();
  });
});
