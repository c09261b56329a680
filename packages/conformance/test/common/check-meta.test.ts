import { describe, expect, it } from 'vitest';
import { judge } from '../../src/server/check.js';

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

describe('how to fix', () => {
  it('every server check and client check says in one line how to fix a failure', async () => {
    const { checks } = await import('../../src/server/checks/index.js');
    const { clientChecks } = await import('../../src/client/checks/index.js');
    for (const check of [...checks, ...clientChecks]) {
      expect(check.fix.length, check.id).toBeGreaterThan(20);
      expect(check.fix, check.id).not.toContain('\n');
    }
  });
});
