import { describe, expect, it } from 'vitest';
import { type CheckResult, exitCodeFor, summarize, verdictOf } from '../../src/common/report.js';

const check = (severity: CheckResult['severity'], status: CheckResult['status']): CheckResult => ({
  id: 'x',
  title: 'x',
  category: 'x',
  severity,
  status,
  reference: 'RFC 6750 §3.1',
  citation: '',
  precondition: '',
  details: '',
  evidence: [],
  evidenceOmitted: 0,
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
  it('with certify, a skipped must check fails the run; the verdict line names what was not verified', () => {
    const skippedMust = { ...check('must', 'skipped'), id: 'integrity-expired' };
    expect(exitCodeFor([skippedMust], { certify: true })).toBe(1);
    expect(exitCodeFor([check('should', 'skipped')], { certify: true })).toBe(0);
    expect(verdictOf([check('must', 'passed'), skippedMust]).text).toBe(
      'PASS — 1 must check not verified: integrity-expired',
    );
    expect(verdictOf([check('must', 'passed'), skippedMust], { certify: true })).toEqual({
      code: 1,
      word: 'FAIL',
      text: 'FAIL — certification needs every must check verified; 1 must check not verified: integrity-expired',
    });
    expect(verdictOf([check('must', 'passed'), check('should', 'skipped')]).text).toBe(
      'PASS — every must check passed',
    );
    expect(verdictOf([{ ...check('must', 'failed'), id: 'a' }, skippedMust]).text).toBe(
      'FAIL — 1 must check failed or errored: a; 1 must check not verified: integrity-expired',
    );
  });
});
