import { describe, expect, it } from 'vitest';
import { RequestLog, redactAuthorization, redactTarget } from '../src/request-log.js';

describe('request-log', () => {
  it('redacts secret-bearing query parameters, whatever their case or encoding', () => {
    expect(redactTarget('/a?limit=5&access_token=abc&Client_Secret=s&x=1')).toBe(
      '/a?limit=5&access_token=[redacted]&Client_Secret=[redacted]&x=1',
    );
    expect(redactTarget('/a?access%5Ftoken=abc')).toBe('/a?access%5Ftoken=[redacted]');
    expect(redactTarget('/a?%zz=1&client_id')).toBe('/a?%zz=1&client_id=[redacted]');
    expect(redactTarget('/plain')).toBe('/plain');
  });

  it('shortens bearer credentials to their last 6 characters and hides Basic ones', () => {
    expect(redactAuthorization('Bearer eyJhbGciOi.payload.signature123456')).toBe('Bearer …123456');
    expect(redactAuthorization('Basic Y2xpZW50OnNlY3JldA==')).toBe('Basic [redacted]');
    expect(redactAuthorization('Bearer abc')).toBe('Bearer …');
    expect(redactAuthorization('justonelongvalue')).toBe('…gvalue');
    expect(redactAuthorization('short')).toBe('[redacted]');
  });

  it('keeps the newest entries up to its capacity', () => {
    const log = new RequestLog(2);
    for (const status of [200, 401, 403])
      log.add({ at: 0, server: 'api', method: 'GET', target: '/', status });
    expect(log.entries().map((entry) => entry.status)).toEqual([401, 403]);
  });
});
