/** One request as the mock saw it, with secrets and tokens redacted. */
export interface LoggedRequest {
  /** Epoch ms (from the mock's clock) when the request arrived. */
  readonly at: number;
  readonly server: 'auth' | 'api';
  readonly method: string;
  /** Path and query; values of secret-bearing parameters are replaced by `[redacted]`. */
  readonly target: string;
  readonly status: number;
  /** The Authorization header redacted: a bearer token's last 6 characters, nothing of anything else. */
  readonly authorization?: string;
  /** The OAuth or RFC 6750 error code of the answer, when there was one. */
  readonly error?: string;
  /** The partner the request was authenticated as, when it was. */
  readonly partnerId?: string;
}

/**
 * The toolkit's one rule for tokens: at most their last 6 characters (nothing of a short one), enough
 * to tell two tokens apart in a log. Secrets and Basic credentials: nothing at all.
 */
export function shortenToken(token: string): string {
  return token.length <= 12 ? '…' : `…${token.slice(-6)}`;
}

const redacted = '[redacted]';

// Query parameters whose value is (or may be) a credential.
const secretParam =
  /token|secret|password|passwd|assertion|credential|api_?key|^(?:client_id|code|key|auth|authorization|jwt)$/;

// A compact JWS anywhere in a target (a token in an unexpected parameter or in the path).
const compactJws = /eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g;

function decodeName(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return raw;
  }
}

/**
 * Redacts a request target for the log: values of credential-bearing query parameters become
 * `[redacted]`, any JWS-shaped token shows its last 6 characters, and userinfo (`user:pass@`) of a
 * target in absolute or authority form is removed. Never throws.
 */
export function redactTarget(target: string): string {
  let rest = target;
  let authority = '';
  if (!rest.startsWith('/')) {
    // Absolute form (http://user:pass@host/…) or authority form (user:pass@host:443).
    const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(rest)?.[0] ?? '';
    const end = rest.slice(scheme.length).search(/[/?#]/);
    const hostPart = end === -1 ? rest.slice(scheme.length) : rest.slice(scheme.length, scheme.length + end);
    const at = hostPart.lastIndexOf('@');
    authority = `${scheme}${at === -1 ? hostPart : `${redacted}@${hostPart.slice(at + 1)}`}`;
    rest = rest.slice(scheme.length + hostPart.length);
  }
  const index = rest.indexOf('?');
  let path = index === -1 ? rest : rest.slice(0, index);
  path = path.replace(compactJws, shortenToken);
  if (index === -1) return `${authority}${path}`;
  const query = rest
    .slice(index + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const rawName = eq === -1 ? pair : pair.slice(0, eq);
      return secretParam.test(decodeName(rawName).trim().toLowerCase())
        ? `${rawName}=${redacted}`
        : pair.replace(compactJws, shortenToken);
    });
  return `${authority}${path}?${query.join('&')}`;
}

// Schemes the log names; anything else might be a credential itself and is not shown.
const knownSchemes = new Set(['bearer', 'basic', 'digest', 'token', 'dpop', 'mac', 'negotiate', 'hoba']);
const jwsShape = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/**
 * Redacts an Authorization header for the log. Only a Bearer credential shaped like a compact JWS
 * (an access token) keeps its last 6 characters (`Bearer …abc123`); Basic credentials, malformed
 * values and other schemes show the scheme name at most (`Basic [redacted]`).
 */
export function redactAuthorization(header: string): string {
  const match = /^(\S+)(?:\s+(.*))?$/s.exec(header.trim());
  if (!match?.[2]) return redacted;
  const scheme = match[1]!;
  if (!knownSchemes.has(scheme.toLowerCase())) return redacted;
  const credentials = match[2].trim();
  if (scheme.toLowerCase() === 'bearer' && jwsShape.test(credentials))
    return `${scheme} ${shortenToken(credentials)}`;
  return `${scheme} ${redacted}`;
}

/** A bounded in-memory log (the newest `capacity` requests). */
export class RequestLog {
  readonly #entries: LoggedRequest[] = [];
  readonly #capacity: number;

  constructor(capacity = 1000) {
    this.#capacity = capacity;
  }

  add(entry: LoggedRequest): void {
    this.#entries.push(entry);
    if (this.#entries.length > this.#capacity) this.#entries.shift();
  }

  entries(): readonly LoggedRequest[] {
    return [...this.#entries];
  }
}
