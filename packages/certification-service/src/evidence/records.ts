import type { Exchange } from './exchange.js';
import type { RejectionReason } from './metrics.js';
import type { AttributeValue, OtlpLogRecord } from './otlp.js';

/**
 * The attributes of a log record of evidence (OpenTelemetry semantic conventions where they have one):
 * each is read into a field of `Exchange` (see exchange.ts), and nothing else of the record is kept.
 */
export const evidenceAttributes = {
  required: ['partner.id', 'http.request.method', 'url.path', 'http.response.status_code'],
  optional: [
    'token.fingerprint',
    'oauth.grant_type',
    'oauth.scope.granted',
    'oauth.token.expires_in',
    'http.response.header.retry-after',
    'error.type',
  ],
} as const;

/** What a record became: an exchange to store (without its reporter), or why not. */
export type RecordOutcome =
  | { exchange: Omit<Exchange, 'reporterId'> }
  | { rejected: RejectionReason; detail: string };

/** Attribute names that carry a credential, whatever their value (compared lower-case, `-` as `_`). */
const credentialNames =
  /(^|[._])(authorization|proxy_authorization|access_token|refresh_token|id_token|client_secret|password|cookie|set_cookie|api_key)$/;
/** A JWT (or JWS) in compact form: its header is base64url JSON naming an `alg`. */
const compactJws =
  /^([A-Za-z0-9_-]{10,})\.([A-Za-z0-9_-]*)\.([A-Za-z0-9_-]*)(\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*)?$/;

function looksLikeToken(text: string): boolean {
  const trimmed = text.trim();
  if (/^(bearer|basic|dpop|mac)\s+\S{8,}/i.test(trimmed)) return true;
  const jws = compactJws.exec(trimmed);
  if (!jws) return false;
  try {
    const header = JSON.parse(Buffer.from(jws[1]!, 'base64url').toString('utf8')) as unknown;
    return header !== null && typeof header === 'object' && 'alg' in header;
  } catch {
    return false;
  }
}

/** The name of the first attribute that carries, or looks like it carries, a token; else undefined. */
export function tokenLikeAttribute(attributes: ReadonlyMap<string, AttributeValue>): string | undefined {
  const carries = (value: AttributeValue): boolean => {
    if (typeof value === 'string') return looksLikeToken(value);
    if (Array.isArray(value)) return value.some(carries);
    if (value !== null && typeof value === 'object')
      return Object.entries(value).some(
        ([key, inner]) => credentialNames.test(key.toLowerCase().replaceAll('-', '_')) || carries(inner),
      );
    return false;
  };
  for (const [key, value] of attributes)
    if (credentialNames.test(key.toLowerCase().replaceAll('-', '_')) || carries(value)) return key;
  return undefined;
}

const missing = (name: string): RecordOutcome => ({
  rejected: 'missing_attribute',
  detail: `a record lacks ${name}`,
});
const invalid = (name: string, expected: string): RecordOutcome => ({
  rejected: 'invalid_attribute',
  detail: `${name} must be ${expected}`,
});

/** Printable text of 1 to `max` characters, without control characters. */
const text = (value: AttributeValue | undefined, max: number): string | undefined =>
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are refused
  typeof value === 'string' && value.length > 0 && value.length <= max && !/[\u0000-\u001f\u007f]/.test(value)
    ? value
    : undefined;

const integer = (value: AttributeValue | undefined): number | undefined =>
  typeof value === 'number' && Number.isSafeInteger(value)
    ? value
    : typeof value === 'string' && /^\d{1,15}$/.test(value)
      ? Number(value)
      : undefined;

/** `Retry-After` (OTel's header attribute: a string or an array of them): delay-seconds, or an HTTP date. */
function retryAfterSeconds(value: AttributeValue, at: number): number | undefined {
  const first = Array.isArray(value) ? value[0] : value;
  if (typeof first === 'number' && Number.isSafeInteger(first) && first >= 0) return first;
  if (typeof first !== 'string' || first.length > 64) return undefined;
  if (/^\s*\d{1,9}\s*$/.test(first)) return Number(first);
  const date = Date.parse(first);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - at) / 1000));
}

/** Reads one log record into an exchange, or says why it is rejected. Never keeps a token or a body. */
export function exchangeOf(record: OtlpLogRecord): RecordOutcome {
  const { attributes } = record;
  const tokenLike = tokenLikeAttribute(attributes);
  if (tokenLike !== undefined)
    return {
      rejected: 'token_like',
      detail: `a record's attribute ${JSON.stringify(tokenLike.slice(0, 60))} carries what looks like a token or a credential: report its keyed fingerprint (token.fingerprint) instead`,
    };
  if (record.timeUnixNano === undefined)
    return { rejected: 'no_time', detail: 'a record has neither timeUnixNano nor observedTimeUnixNano' };
  const at = Math.floor(Number(record.timeUnixNano) / 1e6);
  if (!Number.isSafeInteger(at) || at <= 0)
    return { rejected: 'no_time', detail: 'a record time is out of range' };
  for (const name of evidenceAttributes.required) if (!attributes.has(name)) return missing(name);
  const partnerId = text(attributes.get('partner.id'), 200);
  if (!partnerId) return invalid('partner.id', 'the partner id (client id), 1 to 200 characters');
  const method = attributes.get('http.request.method');
  if (typeof method !== 'string' || !/^[A-Za-z]{1,16}$/.test(method))
    return invalid('http.request.method', 'an HTTP method such as GET or POST');
  const rawPath = text(attributes.get('url.path'), 2048);
  if (!rawPath?.startsWith('/'))
    return invalid('url.path', 'the path served, starting with /, at most 2048 characters');
  const status = integer(attributes.get('http.response.status_code'));
  if (status === undefined || status < 100 || status > 599)
    return invalid('http.response.status_code', 'the HTTP status answered, 100 to 599');
  const exchange: Omit<Exchange, 'reporterId'> = {
    at,
    partnerId,
    kind: attributes.has('oauth.grant_type') ? 'token' : 'api',
    method: method.toUpperCase(),
    // The path without a query or fragment, should a reporter have left one on.
    path: rawPath.split(/[?#]/)[0]!,
    status,
  };
  if (attributes.has('token.fingerprint')) {
    const fingerprint = text(attributes.get('token.fingerprint'), 200);
    if (!fingerprint) return invalid('token.fingerprint', 'a keyed hash of the token, 1 to 200 characters');
    exchange.fingerprint = fingerprint;
  }
  if (attributes.has('oauth.scope.granted')) {
    const granted = attributes.get('oauth.scope.granted')!;
    const scopes = Array.isArray(granted)
      ? granted
      : typeof granted === 'string'
        ? granted.split(' ').filter(Boolean)
        : undefined;
    if (
      !scopes ||
      scopes.length > 100 ||
      !scopes.every((scope) => text(scope, 200) !== undefined && !/\s/.test(scope as string))
    )
      return invalid(
        'oauth.scope.granted',
        'the scopes granted: a space-separated string or an array of strings (at most 100)',
      );
    exchange.scopesGranted = scopes as string[];
  }
  if (attributes.has('oauth.token.expires_in')) {
    const seconds = integer(attributes.get('oauth.token.expires_in'));
    if (seconds === undefined || seconds > 10 * 365 * 86_400)
      return invalid('oauth.token.expires_in', 'the seconds the issued token lives (an integer)');
    exchange.expiresAt = at + seconds * 1000;
  }
  if (attributes.has('http.response.header.retry-after')) {
    const seconds = retryAfterSeconds(attributes.get('http.response.header.retry-after')!, at);
    if (seconds === undefined)
      return invalid(
        'http.response.header.retry-after',
        'the Retry-After header answered (seconds or an HTTP date), as a string or an array of strings',
      );
    exchange.retryAfterSeconds = seconds;
  }
  if (attributes.has('error.type')) {
    const error = text(attributes.get('error.type'), 100);
    if (!error)
      return invalid('error.type', 'the OAuth error answered, e.g. invalid_token (1 to 100 characters)');
    exchange.error = error;
  }
  return { exchange };
}
