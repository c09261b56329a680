import { gunzipSync } from 'node:zlib';
import protobuf from 'protobufjs';
import { ServiceError } from '../errors.js';

/**
 * OTLP/HTTP logs, as `POST /evidence` takes them: the JSON encoding and the binary protobuf encoding of
 * an `ExportLogsServiceRequest` (opentelemetry-proto, `collector/logs/v1`), read into one shape. Only
 * what evidence uses is decoded: each record's times and attributes. A record's body, severity, trace
 * and span ids, and the resource and scope, are skipped unread (protobuf) or never looked at (JSON).
 */

/** An attribute's value, plain: AnyValue's string, int (a number, or a decimal string past 2^53), double, bool, array or key-value list; bytes as base64. */
export type AttributeValue =
  | string
  | number
  | boolean
  | null
  | AttributeValue[]
  | { [key: string]: AttributeValue };

/** One log record as evidence reads it. */
export interface OtlpLogRecord {
  /** `timeUnixNano`, else `observedTimeUnixNano`, as a decimal string; undefined when both are absent or 0. */
  timeUnixNano?: string;
  attributes: Map<string, AttributeValue>;
}

/** The request could not be read: 400 (or 413 when `tooLarge`), with this message. */
export class OtlpRequestError extends ServiceError {
  constructor(
    message: string,
    readonly tooLarge = false,
  ) {
    super('ERR_EVIDENCE_REQUEST', message);
    this.name = 'OtlpRequestError';
  }
}

/**
 * The messages of opentelemetry-proto 1.x that evidence reads, by their field numbers
 * (logs/v1/logs.proto, common/v1/common.proto, collector/logs/v1/logs_service.proto), in protobufjs's
 * JSON form. Fields left out here (a record's body, severity, flags, trace and span ids, event name; the
 * resource, the scope) are skipped by the decoder without being read into anything.
 */
const otlpLogs = protobuf.Root.fromJSON({
  nested: {
    ExportLogsServiceRequest: { fields: { resourceLogs: { rule: 'repeated', type: 'ResourceLogs', id: 1 } } },
    ExportLogsServiceResponse: { fields: { partialSuccess: { type: 'ExportLogsPartialSuccess', id: 1 } } },
    ExportLogsPartialSuccess: {
      fields: { rejectedLogRecords: { type: 'int64', id: 1 }, errorMessage: { type: 'string', id: 2 } },
    },
    ResourceLogs: { fields: { scopeLogs: { rule: 'repeated', type: 'ScopeLogs', id: 2 } } },
    ScopeLogs: { fields: { logRecords: { rule: 'repeated', type: 'LogRecord', id: 2 } } },
    LogRecord: {
      fields: {
        timeUnixNano: { type: 'fixed64', id: 1 },
        attributes: { rule: 'repeated', type: 'KeyValue', id: 6 },
        observedTimeUnixNano: { type: 'fixed64', id: 11 },
      },
    },
    KeyValue: { fields: { key: { type: 'string', id: 1 }, value: { type: 'AnyValue', id: 2 } } },
    AnyValue: {
      oneofs: {
        value: {
          oneof: [
            'stringValue',
            'boolValue',
            'intValue',
            'doubleValue',
            'arrayValue',
            'kvlistValue',
            'bytesValue',
          ],
        },
      },
      fields: {
        stringValue: { type: 'string', id: 1 },
        boolValue: { type: 'bool', id: 2 },
        intValue: { type: 'int64', id: 3 },
        doubleValue: { type: 'double', id: 4 },
        arrayValue: { type: 'ArrayValue', id: 5 },
        kvlistValue: { type: 'KeyValueList', id: 6 },
        bytesValue: { type: 'bytes', id: 7 },
      },
    },
    ArrayValue: { fields: { values: { rule: 'repeated', type: 'AnyValue', id: 1 } } },
    KeyValueList: { fields: { values: { rule: 'repeated', type: 'KeyValue', id: 1 } } },
  },
});
const requestType = otlpLogs.lookupType('ExportLogsServiceRequest');
const responseType = otlpLogs.lookupType('ExportLogsServiceResponse');

/** The content types `POST /evidence` reads. */
export type OtlpEncoding = 'json' | 'protobuf';

/** `application/json` → json, `application/x-protobuf` → protobuf (parameters ignored), else undefined. */
export function encodingOf(contentType: string | undefined): OtlpEncoding | undefined {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/json') return 'json';
  if (type === 'application/x-protobuf') return 'protobuf';
  return undefined;
}

/** A gzip body (`Content-Encoding: gzip`) inflated to at most `maxBytes`, else OtlpRequestError. */
export function inflate(body: Buffer, maxBytes: number): Buffer {
  try {
    return gunzipSync(body, { maxOutputLength: maxBytes });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
      throw new OtlpRequestError(`the body inflates past ${maxBytes} bytes: send smaller batches`, true);
    throw new OtlpRequestError('the body is not valid gzip (Content-Encoding: gzip)');
  }
}

/**
 * The log records of a request body, at most `maxRecords` (more: OtlpRequestError with `tooLarge`).
 * Throws OtlpRequestError when the body is not an ExportLogsServiceRequest in the encoding given.
 */
export function decodeLogs(body: Buffer, encoding: OtlpEncoding, maxRecords: number): OtlpLogRecord[] {
  let request: unknown;
  if (encoding === 'json') {
    try {
      request = JSON.parse(body.toString('utf8'));
    } catch {
      throw new OtlpRequestError(
        'the body is not JSON: send an OTLP ExportLogsServiceRequest in its JSON encoding ({"resourceLogs": [...]})',
      );
    }
  } else {
    try {
      request = requestType.toObject(requestType.decode(body), { longs: String, bytes: String });
    } catch {
      throw new OtlpRequestError(
        'the body is not an OTLP ExportLogsServiceRequest in the protobuf encoding (application/x-protobuf)',
      );
    }
  }
  return recordsOf(request, maxRecords);
}

/** The answer to an export, in the request's encoding: OTLP's ExportLogsServiceResponse. */
export function exportResponse(
  encoding: OtlpEncoding,
  rejected: number,
  errorMessage: string,
): { body: string | Uint8Array<ArrayBuffer>; contentType: string } {
  const message = rejected > 0 ? { partialSuccess: { rejectedLogRecords: rejected, errorMessage } } : {};
  if (encoding === 'json') return { body: JSON.stringify(message), contentType: 'application/json' };
  return {
    body: new Uint8Array(responseType.encode(responseType.fromObject(message)).finish()),
    contentType: 'application/x-protobuf',
  };
}

const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const objectOf = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};

function recordsOf(request: unknown, maxRecords: number): OtlpLogRecord[] {
  if (request === null || typeof request !== 'object' || Array.isArray(request))
    throw new OtlpRequestError(
      'the body is not an ExportLogsServiceRequest: expected {"resourceLogs": [...]}',
    );
  const records: OtlpLogRecord[] = [];
  for (const resource of list(objectOf(request).resourceLogs))
    for (const scope of list(objectOf(resource).scopeLogs))
      for (const item of list(objectOf(scope).logRecords)) {
        if (records.length === maxRecords)
          throw new OtlpRequestError(
            `the batch holds more than ${maxRecords} log records: send at most ${maxRecords} per request`,
            true,
          );
        const record = objectOf(item);
        const attributes = new Map<string, AttributeValue>();
        for (const pair of list(record.attributes)) {
          const { key, value } = objectOf(pair);
          if (typeof key === 'string') attributes.set(key, plain(value, 0));
        }
        const time = nanos(record.timeUnixNano) ?? nanos(record.observedTimeUnixNano);
        records.push({ ...(time !== undefined && { timeUnixNano: time }), attributes });
      }
  return records;
}

/** A fixed64 time as JSON gives it (a decimal string, or a number) or protobufjs (a string); 0 is absent. */
function nanos(value: unknown): string | undefined {
  const text = typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : value;
  if (typeof text !== 'string' || !/^\d{1,20}$/.test(text) || /^0+$/.test(text)) return undefined;
  return text.replace(/^0+/, '');
}

/** Nesting an attribute's value may have; deeper is cut (null), as no evidence attribute nests. */
const maxDepth = 8;

/** An AnyValue (JSON or decoded) as a plain value. */
function plain(value: unknown, depth: number): AttributeValue {
  const any = objectOf(value);
  if (typeof any.stringValue === 'string') return any.stringValue;
  if (typeof any.boolValue === 'boolean') return any.boolValue;
  if ('intValue' in any) {
    const int = any.intValue;
    if (typeof int === 'number' && Number.isSafeInteger(int)) return int;
    if (typeof int === 'string' && /^-?\d{1,20}$/.test(int))
      return Number.isSafeInteger(Number(int)) ? Number(int) : int;
    return null;
  }
  if (typeof any.doubleValue === 'number') return any.doubleValue;
  if (typeof any.bytesValue === 'string') return any.bytesValue;
  if (depth >= maxDepth) return null;
  if ('arrayValue' in any) return list(objectOf(any.arrayValue).values).map((item) => plain(item, depth + 1));
  if ('kvlistValue' in any) {
    const out: Record<string, AttributeValue> = Object.create(null);
    for (const pair of list(objectOf(any.kvlistValue).values)) {
      const { key, value: inner } = objectOf(pair);
      if (typeof key === 'string') out[key] = plain(inner, depth + 1);
    }
    return out;
  }
  return null;
}
