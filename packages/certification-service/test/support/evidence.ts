import type { Database } from '../../src/index.js';

/** An OTLP AnyValue in the JSON encoding, from a plain value. */
export function anyValue(value: unknown): Record<string, unknown> {
  if (typeof value === 'string') return { stringValue: value };
  if (typeof value === 'boolean') return { boolValue: value };
  if (typeof value === 'number')
    return Number.isInteger(value) ? { intValue: value } : { doubleValue: value };
  if (Array.isArray(value)) return { arrayValue: { values: value.map(anyValue) } };
  return {
    kvlistValue: {
      values: Object.entries(value as object).map(([key, inner]) => ({ key, value: anyValue(inner) })),
    },
  };
}

/** One exchange's attributes as a gateway reports them (an API call by default). */
export function exchangeAttributes(partnerId: string, extra: Record<string, unknown> = {}) {
  return {
    'partner.id': partnerId,
    'http.request.method': 'GET',
    'url.path': '/v1/loans',
    'http.response.status_code': 200,
    'token.fingerprint': 'fp-1',
    ...extra,
  };
}

/** An ExportLogsServiceRequest in the JSON encoding: one log record per entry. */
export function otlpJson(records: Array<{ at?: number; attributes: Record<string, unknown> }>): string {
  return JSON.stringify({
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'production-gateway' } }] },
        scopeLogs: [
          {
            scope: { name: 'gateway' },
            logRecords: records.map((record) => ({
              ...(record.at !== undefined && { timeUnixNano: `${record.at}000000` }),
              severityText: 'INFO',
              body: { stringValue: 'served' },
              attributes: Object.entries(record.attributes).map(([key, value]) => ({
                key,
                value: anyValue(value),
              })),
            })),
          },
        ],
      },
    ],
  });
}

/** POSTs a body to /evidence with a reporter key (or none). */
export function postEvidence(
  url: string,
  body: string | Uint8Array,
  options: { key?: string; type?: string; headers?: Record<string, string> } = {},
): Promise<Response> {
  return fetch(`${url}/evidence`, {
    method: 'POST',
    headers: {
      'content-type': options.type ?? 'application/json',
      ...(options.key !== undefined && { authorization: `Bearer ${options.key}` }),
      ...options.headers,
    },
    body: typeof body === 'string' ? body : new Uint8Array(body),
  });
}

/** An `evidence_exchanges` row, as the tests read it. */
export interface StoredExchange {
  partner_id: string;
  reporter_id: string;
  at: number;
  kind: string;
  method: string;
  path: string;
  status: number;
  fingerprint: string | null;
  scopes_granted: string[] | null;
  expires_at: number | null;
  retry_after_seconds: number | null;
  error: string | null;
}

/** The exchanges stored, as rows without their ids and arrival, in `at` then id order. */
export async function storedExchanges(db: Database, partnerId?: string): Promise<StoredExchange[]> {
  const rows = await db.query<StoredExchange>(
    `SELECT partner_id, reporter_id, at, kind, method, path, status, fingerprint, scopes_granted, expires_at,
       retry_after_seconds, error FROM evidence_exchanges ${partnerId ? 'WHERE partner_id = $1' : ''} ORDER BY at, id`,
    partnerId ? [partnerId] : [],
  );
  return rows.map((row) => ({
    ...row,
    at: Number(row.at),
    expires_at: row.expires_at == null ? null : Number(row.expires_at),
  }));
}
