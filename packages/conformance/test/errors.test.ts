import { describe, expect, it } from 'vitest';
import { ConformanceError, exitCodeForError } from '../src/errors.js';

describe('ConformanceError', () => {
  it('keeps code and cause; only an unreachable target exits 3', () => {
    const cause = new Error('ECONNREFUSED');
    const error = new ConformanceError('ERR_UNREACHABLE', 'Cannot reach', { cause });
    expect(error).toMatchObject({
      name: 'ConformanceError',
      code: 'ERR_UNREACHABLE',
      message: 'Cannot reach',
      cause,
    });
    expect(exitCodeForError(error)).toBe(3);
    for (const code of ['ERR_USAGE', 'ERR_CREDENTIALS', 'ERR_PREFLIGHT', 'ERR_REPORT'] as const)
      expect(exitCodeForError(new ConformanceError(code, 'x'))).toBe(2);
  });
});
