import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  type EvidenceRecord,
  fingerprint,
  isEvidenceRecord,
  otlpLogsRequest,
} from '../src/evidence-record.js';

const key = Buffer.from('fk_unit_fingerprint_key_0123456789abcdef');
const token = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';

describe('evidence-record: fingerprint', () => {
  it('is HMAC-SHA-256 under the key, 128 bits, base64url — equal for equal tokens, different under another key', () => {
    const expected = createHmac('sha256', key).update(token).digest().subarray(0, 16).toString('base64url');
    expect(fingerprint(key, token)).toBe(expected);
    expect(fingerprint(key, token)).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(fingerprint(key, `${token}x`)).not.toBe(expected);
    expect(fingerprint(Buffer.from('another_key_0123456789abcdef0123456'), token)).not.toBe(expected);
    // Not a plain hash anyone holding the token could compute.
    expect(createHash('sha256').update(token).digest('base64url')).not.toContain(expected);
  });
});

describe('evidence-record: otlpLogsRequest', () => {
  const record: EvidenceRecord = {
    at: 1_767_225_600_123,
    partnerId: 'ptn_1',
    method: 'POST',
    path: '/oauth/token',
    status: 200,
    fingerprint: 'abc',
    grantType: 'client_credentials',
    scopeGranted: 'read:loans',
    expiresIn: 43199,
    retryAfter: '2',
    error: 'slow_down',
  };

  it('encodes resourceLogs → scopeLogs → logRecords with timeUnixNano and the named attributes', () => {
    const body = JSON.parse(otlpLogsRequest([record], 0));
    const [resourceLogs] = body.resourceLogs;
    expect(resourceLogs.resource.attributes).toEqual([
      { key: 'service.name', value: { stringValue: 'partner-mock' } },
    ]);
    const [logRecord] = resourceLogs.scopeLogs[0].logRecords;
    expect(logRecord.timeUnixNano).toBe('1767225600123000000');
    expect(logRecord.attributes).toEqual([
      { key: 'partner.id', value: { stringValue: 'ptn_1' } },
      { key: 'http.request.method', value: { stringValue: 'POST' } },
      { key: 'url.path', value: { stringValue: '/oauth/token' } },
      { key: 'http.response.status_code', value: { intValue: '200' } },
      { key: 'token.fingerprint', value: { stringValue: 'abc' } },
      { key: 'oauth.grant_type', value: { stringValue: 'client_credentials' } },
      { key: 'oauth.scope.granted', value: { stringValue: 'read:loans' } },
      { key: 'oauth.token.expires_in', value: { intValue: '43199' } },
      { key: 'http.response.header.retry-after', value: { arrayValue: { values: [{ stringValue: '2' }] } } },
      { key: 'error.type', value: { stringValue: 'slow_down' } },
    ]);
  });

  it('carries the drops as a resource attribute only when there were some', () => {
    const body = JSON.parse(otlpLogsRequest([record], 7));
    expect(body.resourceLogs[0].resource.attributes).toContainEqual({
      key: 'partner_lending.evidence.dropped',
      value: { intValue: '7' },
    });
  });

  it('reads back only records of its own shape (the spool)', () => {
    expect(isEvidenceRecord(JSON.parse(JSON.stringify(record)))).toBe(true);
    expect(isEvidenceRecord({ ...record, status: '200' })).toBe(false);
    expect(isEvidenceRecord(null)).toBe(false);
  });
});
