import { describe, expect, it } from 'vitest';
import { type CheckResult, exitCodeFor, summarize } from '../src/report.js';

const check = (severity: CheckResult['severity'], status: CheckResult['status']): CheckResult => ({
  id: 'x',
  title: 'x',
  category: 'x',
  severity,
  status,
  reference: 'RFC 6750 §3.1',
  details: '',
  durationMs: 1,
});

describe('report', () => {
  it('counts by status', () => {
    expect(summarize([check('must', 'passed'), check('should', 'failed'), check('must', 'skipped')])).toEqual(
      {
        passed: 1,
        failed: 1,
        skipped: 1,
        errored: 0,
      },
    );
  });
  it('exits 1 only for a failed or errored must check', () => {
    expect(exitCodeFor([check('should', 'failed'), check('must', 'skipped')])).toBe(0);
    expect(exitCodeFor([check('must', 'errored')])).toBe(1);
    expect(exitCodeFor([check('must', 'failed')])).toBe(1);
  });
});
