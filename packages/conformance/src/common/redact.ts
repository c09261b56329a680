import { inspect } from 'node:util';

/** A token shortened to its last 6 characters, the only form a token may take in any output. */
export function shorten(token: string): string {
  return `…${token.slice(-6)}`;
}

// Anything shaped like a compact JWS or a piece of one: header.payload[.signature], the signature
// possibly empty (alg none), or cut off (a malformed value built from a token).
const jwtPattern = /eyJ[A-Za-z0-9_-]{4,}(?:\.[A-Za-z0-9_-]*){1,2}/g;

/**
 * Removes secrets from text: every registered secret (raw and URL-encoded) becomes its placeholder,
 * every JWT-shaped string and registered token its last 6 characters.
 */
export class Redactor {
  readonly #secrets = new Map<string, string>();
  readonly #tokens = new Set<string>();

  /** Registers a secret (client secret, client id) and the placeholder that replaces it. */
  addSecret(value: string, placeholder: string): void {
    if (value.length < 4) return;
    this.#secrets.set(value, placeholder);
    this.#secrets.set(encodeURIComponent(value), placeholder);
    this.#secrets.set(new URLSearchParams({ v: value }).toString().slice(2), placeholder);
  }

  /** Registers an access token that may not be JWT-shaped (an opaque token). */
  addToken(value: string): void {
    if (value.length >= 8) this.#tokens.add(value);
  }

  /** The placeholder of a registered secret, if it is one. */
  placeholderOf(value: string): string | undefined {
    return this.#secrets.get(value);
  }

  redact(text: string): string {
    let out = text;
    // Longest first, so that a secret containing another is replaced whole.
    for (const [value, placeholder] of [...this.#secrets].sort((a, b) => b[0].length - a[0].length))
      out = out.split(value).join(placeholder);
    for (const token of this.#tokens) out = out.split(token).join(shorten(token));
    return out.replace(jwtPattern, (match) => shorten(match));
  }
}

/**
 * Wraps a secret so that it stays out of `JSON.stringify`, `util.inspect` and string conversion;
 * `reveal()` is the only way to read it.
 */
export class Secret {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  reveal(): string {
    return this.#value;
  }

  toJSON(): string {
    return '[redacted]';
  }

  toString(): string {
    return '[redacted]';
  }

  [inspect.custom](): string {
    return 'Secret([redacted])';
  }
}
