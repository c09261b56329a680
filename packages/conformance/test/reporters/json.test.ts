import { describe, expect, it } from 'vitest';
import { formatJsonReport } from '../../src/reporters/json.js';
import { report } from './fixture.js';

describe('formatJsonReport', () => {
  it('writes the contract fields, round-tripping', () => {
    const parsed = JSON.parse(formatJsonReport(report));
    expect(Object.keys(parsed)).toEqual([
      'schemaVersion',
      'tool',
      'mode',
      'certify',
      'target',
      'spec',
      'writes',
      'startedAt',
      'durationMs',
      'summary',
      'notVerified',
      'checks',
    ]);
    expect(Object.keys(parsed.checks[0])).toEqual([
      'id',
      'title',
      'category',
      'severity',
      'status',
      'reference',
      'citation',
      'precondition',
      'details',
      'evidence',
      'evidenceOmitted',
      'durationMs',
    ]);
    expect(parsed).toEqual(report);
  });
});
