import { describe, expect, it } from 'vitest';
import { formatBearerChallenge } from '../src/bearer-challenge.js';

describe('bearer-challenge', () => {
  it('has no error attribute when no credentials were sent (RFC 6750 §3.1)', () => {
    expect(formatBearerChallenge({ realm: 'partner-api' })).toBe('Bearer realm="partner-api"');
  });
  it('quotes every attribute and keeps quotes out of values', () => {
    expect(
      formatBearerChallenge({
        error: 'insufficient_scope',
        errorDescription: 'needs "x"',
        scope: 'read:loans',
      }),
    ).toBe('Bearer error="insufficient_scope", error_description="needs \'x\'", scope="read:loans"');
  });
});
