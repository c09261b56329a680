/**
 * Redaction, the toolkit's single rule (the SDK uses these too). Tokens are bearer credentials: anyone
 * holding the string can call the API. We show at most their last 6 characters, enough to tell two
 * tokens apart in a log.
 */

/** `…abc123`: the last 6 characters of a token, never the whole of it. */
export function shortenToken(token: string): string {
  return token.length <= 12 ? '…' : `…${token.slice(-6)}`;
}

/** Replaces every occurrence of each secret in `text` with `[REDACTED]` (for server-provided text). */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length >= 4) out = out.split(secret).join('[REDACTED]');
  }
  return out;
}

// A JWS compact serialisation (what the auth service issues): header.payload.signature, base64url.
const JWT_SHAPE = /eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g;

/**
 * Shortens every JWT-shaped string in `text` and every given token to `…last6`: what the toolkit
 * applies to anything a server sends back before it reaches an error or a log.
 */
export function redactTokens(text: string, tokens: readonly string[] = []): string {
  let out = text;
  for (const token of tokens) {
    if (token.length >= 8 && out.includes(token)) out = out.split(token).join(shortenToken(token));
  }
  return out.replace(JWT_SHAPE, (jwt) => shortenToken(jwt));
}

/**
 * `redactTokens` applied to every string inside a JSON-like value (a parsed error body), returning a
 * copy; other values are kept. Depth-bounded: a deeper value is replaced by `"[…]"`.
 */
export function redactTokensDeep<T>(value: T, tokens: readonly string[] = [], depth = 0): T {
  if (typeof value === 'string') return redactTokens(value, tokens) as T;
  if (typeof value !== 'object' || value === null) return value;
  if (depth > 32) return '[…]' as T;
  if (Array.isArray(value)) return value.map((item) => redactTokensDeep(item, tokens, depth + 1)) as T;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = redactTokensDeep(item, tokens, depth + 1);
  return out as T;
}

/**
 * What went wrong on the wire, from a fetch failure: the system error code (ECONNREFUSED, ENOTFOUND,
 * ECONNRESET…) and its message, found however deep undici nests it (`TypeError: fetch failed` →
 * `Error` → `AggregateError`…). Falls back to the outer message.
 */
export function describeNetworkError(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 6 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && /^E[A-Z_]+$/.test(code)) {
      return `${code}: ${current.message}`;
    }
    if (current instanceof AggregateError && current.errors.length > 0) {
      const inner = describeNetworkError(current.errors[0]);
      if (/^E[A-Z_]+:/.test(inner)) return inner;
    }
    current = current.cause;
  }
  if (error instanceof Error) {
    const inner = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    return `${error.message}${inner}`;
  }
  return String(error);
}
