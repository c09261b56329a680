import { createHmac } from 'node:crypto';

/**
 * One exchange the production gate served a partner, as evidence reports it to the certification
 * service (`POST /evidence`): what a gateway logs anyway, the token replaced by a keyed fingerprint.
 * Never a token, a body or a secret. Encoded as an OTLP/HTTP JSON log record.
 */
export interface EvidenceRecord {
  /** Epoch ms (the gate's clock) when the request arrived. */
  readonly at: number;
  /** `partner.id`. */
  readonly partnerId: string;
  /** `http.request.method`. */
  readonly method: string;
  /** `url.path`: without the query. */
  readonly path: string;
  /** `http.response.status_code`. */
  readonly status: number;
  /** `token.fingerprint`: of the token issued (token endpoint, 200) or presented (API). */
  readonly fingerprint?: string;
  /** `oauth.grant_type`: on every answer of the token endpoint ('' when the request named none). */
  readonly grantType?: string;
  /** `oauth.scope.granted` (space-separated) and `oauth.token.expires_in`: on a token issue. */
  readonly scopeGranted?: string;
  readonly expiresIn?: number;
  /** `http.response.header.retry-after`: the header as answered (seconds or an HTTP-date). */
  readonly retryAfter?: string;
  /** `error.type`: the OAuth (or RFC 6750) error code of the answer. */
  readonly error?: string;
}

/** Bytes of the fingerprint kept: 128 bits. */
const fingerprintBytes = 16;

/**
 * The keyed fingerprint of a token: HMAC-SHA-256 under the gate's fingerprint key, truncated to
 * 128 bits, base64url. Equal tokens give equal fingerprints under one key; without the key nothing
 * about the token can be learnt or checked from it (unlike a plain hash, which anyone holding a
 * token could match).
 */
export function fingerprint(key: Uint8Array, token: string): string {
  return createHmac('sha256', key).update(token).digest().subarray(0, fingerprintBytes).toString('base64url');
}

type AnyValue =
  | { stringValue: string }
  | { intValue: string }
  | { arrayValue: { values: Array<{ stringValue: string }> } };
interface Attribute {
  key: string;
  value: AnyValue;
}

const text = (key: string, value: string): Attribute => ({ key, value: { stringValue: value } });
// OTLP/JSON carries 64-bit integers as decimal strings (the protobuf JSON mapping).
const int = (key: string, value: number): Attribute => ({ key, value: { intValue: String(value) } });

function attributesOf(record: EvidenceRecord): Attribute[] {
  const attributes = [
    text('partner.id', record.partnerId),
    text('http.request.method', record.method),
    text('url.path', record.path),
    int('http.response.status_code', record.status),
  ];
  if (record.fingerprint !== undefined) attributes.push(text('token.fingerprint', record.fingerprint));
  if (record.grantType !== undefined) attributes.push(text('oauth.grant_type', record.grantType));
  if (record.scopeGranted !== undefined) attributes.push(text('oauth.scope.granted', record.scopeGranted));
  if (record.expiresIn !== undefined) attributes.push(int('oauth.token.expires_in', record.expiresIn));
  // The semantic conventions' http.response.header.<key>: the header's values, an array of strings.
  if (record.retryAfter !== undefined)
    attributes.push({
      key: 'http.response.header.retry-after',
      value: { arrayValue: { values: [{ stringValue: record.retryAfter }] } },
    });
  if (record.error !== undefined) attributes.push(text('error.type', record.error));
  return attributes;
}

/** The resource attribute saying how many exchanges were dropped since the previous batch. */
export const droppedAttribute = 'partner_lending.evidence.dropped';

/**
 * A batch as an OTLP/HTTP JSON logs request: resourceLogs → scopeLogs → logRecords, each with
 * `timeUnixNano` and the attributes above; the resource says which gate sent it and, when some
 * were lost since the previous batch, how many (`partner_lending.evidence.dropped`).
 */
export function otlpLogsRequest(records: readonly EvidenceRecord[], dropped: number): string {
  const resource = [text('service.name', 'partner-mock')];
  if (dropped > 0) resource.push(int(droppedAttribute, dropped));
  return JSON.stringify({
    resourceLogs: [
      {
        resource: { attributes: resource },
        scopeLogs: [
          {
            scope: { name: '@partner-lending/mock' },
            logRecords: records.map((record) => ({
              timeUnixNano: `${BigInt(Math.round(record.at)) * 1_000_000n}`,
              attributes: attributesOf(record),
            })),
          },
        ],
      },
    ],
  });
}

/** Whether a value read back from the spool is a record this module wrote. */
export function isEvidenceRecord(value: unknown): value is EvidenceRecord {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  return (
    typeof record.at === 'number' &&
    typeof record.partnerId === 'string' &&
    typeof record.method === 'string' &&
    typeof record.path === 'string' &&
    typeof record.status === 'number' &&
    (record.fingerprint === undefined || typeof record.fingerprint === 'string') &&
    (record.grantType === undefined || typeof record.grantType === 'string') &&
    (record.scopeGranted === undefined || typeof record.scopeGranted === 'string') &&
    (record.expiresIn === undefined || typeof record.expiresIn === 'number') &&
    (record.retryAfter === undefined || typeof record.retryAfter === 'string') &&
    (record.error === undefined || typeof record.error === 'string')
  );
}
