import { describe, expect, it } from 'vitest';
import { RequestLog, redactAuthorization, redactTarget, shortenToken } from '../src/request-log.js';

const token = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLXBhcnQtYWJjMTIz';
const basic = Buffer.from('client-id:s3cret-value').toString('base64');

describe('request-log: redactTarget', () => {
  it('redacts secret-bearing query parameters, whatever their case or encoding', () => {
    expect(redactTarget('/a?limit=5&access_token=abc&Client_Secret=s&x=1')).toBe(
      '/a?limit=5&access_token=[redacted]&Client_Secret=[redacted]&x=1',
    );
    expect(redactTarget('/a?access%5Ftoken=abc')).toBe('/a?access%5Ftoken=[redacted]');
    expect(redactTarget('/a?%zz=1&client_id')).toBe('/a?%zz=1&client_id=[redacted]');
    expect(redactTarget('/a?password=p&refresh_token=r&api_key=k&id_token=i&limit=2')).toBe(
      '/a?password=[redacted]&refresh_token=[redacted]&api_key=[redacted]&id_token=[redacted]&limit=2',
    );
    expect(redactTarget('/plain')).toBe('/plain');
  });

  it('shortens a token found elsewhere in the target to its last 6 characters', () => {
    expect(redactTarget(`/v3/partner/${token}/loans?q=${token}`)).toBe(
      `/v3/partner/…${token.slice(-6)}/loans?q=…${token.slice(-6)}`,
    );
  });

  it('removes userinfo from targets in absolute or authority form', () => {
    expect(redactTarget('http://user:pa55@host:8080/v3/x?client_secret=s')).toBe(
      'http://[redacted]@host:8080/v3/x?client_secret=[redacted]',
    );
    expect(redactTarget('user:pa55@host:443')).toBe('[redacted]@host:443');
    expect(redactTarget('http://host/x')).toBe('http://host/x');
  });
});

describe('request-log: redactAuthorization', () => {
  it('shows a bearer access token’s last 6 characters, as the toolkit’s rule allows', () => {
    expect(redactAuthorization(`Bearer ${token}`)).toBe(`Bearer …${token.slice(-6)}`);
    expect(redactAuthorization(`bearer   ${token}  `)).toBe(`bearer …${token.slice(-6)}`);
    expect(redactAuthorization('Bearer a.b.c')).toBe('Bearer …');
  });

  it.each([
    [`Basic ${basic}`, 'Basic [redacted]'],
    ['Basic client-id:s3cret-value', 'Basic [redacted]'],
    [`Basic ${basic}===junk`, 'Basic [redacted]'],
    ['Basic', '[redacted]'],
    ['Bearer s3cret-value-not-a-jws', 'Bearer [redacted]'],
    ['Bearer client-id:s3cret-value', 'Bearer [redacted]'],
    [`Bearer ${token} trailing`, 'Bearer [redacted]'],
    [`Token ${token}`, 'Token [redacted]'],
    [token, '[redacted]'],
    ['s3cret-value', '[redacted]'],
    ['s3cret-value-as-scheme abc', '[redacted]'],
    ['', '[redacted]'],
  ])('shows nothing of the credentials in %j', (header, expected) => {
    expect(redactAuthorization(header)).toBe(expected);
  });
});

describe('request-log: shortenToken', () => {
  it('keeps the last 6 characters of a token longer than 12, nothing of a shorter one', () => {
    expect(shortenToken('abcdefghijklm')).toBe('…hijklm');
    expect(shortenToken('abcdefghijkl')).toBe('…');
  });
});

describe('request-log: RequestLog', () => {
  it('keeps the newest entries up to its capacity', () => {
    const log = new RequestLog(2);
    for (const status of [200, 401, 403])
      log.add({ at: 0, server: 'api', method: 'GET', target: '/', status });
    expect(log.entries().map((entry) => entry.status)).toEqual([401, 403]);
  });
});
