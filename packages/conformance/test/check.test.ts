import { describe, expect, it } from 'vitest';
import { judge } from '../src/check.js';

describe('judge', () => {
  it('fails with the problems and the context, not the pass summary', () => {
    expect(judge(['expected 401, got 200'], ['refused with 401'], ['A = {read:loans}'])).toEqual({
      status: 'failed',
      details: 'expected 401, got 200\nA = {read:loans}',
    });
  });

  it('passes with the context and what was seen', () => {
    expect(judge([], ['refused with 401'], ['A = {read:loans}'])).toEqual({
      status: 'passed',
      details: 'A = {read:loans}\nrefused with 401',
    });
    expect(judge([], [])).toEqual({ status: 'passed', details: 'as expected' });
  });
});
