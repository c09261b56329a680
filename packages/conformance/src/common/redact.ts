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
  /** Secrets matched character by character, each literal or percent-encoded. */
  readonly #patterns: Array<[RegExp, string]> = [];

  /**
   * Registers a secret (client secret, client id) and the placeholder that replaces it, in every
   * encoding a client may send it in: raw, percent-encoded (any characters, either hex case) and
   * form-encoded.
   */
  addSecret(value: string, placeholder: string): void {
    if (value.length < 4) return;
    this.#secrets.set(value, placeholder);
    this.#secrets.set(encodeURIComponent(value), placeholder);
    this.#secrets.set(new URLSearchParams({ v: value }).toString().slice(2), placeholder);
    // Each character literal or %XX: a client that percent-encodes more than it must is still caught.
    const pattern = [...value]
      .map((char) => {
        const bytes = [...new TextEncoder().encode(char)]
          .map((byte) => `%${byte.toString(16).padStart(2, '0')}`)
          .join('');
        return `(?:${char.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}|${bytes.replace(/%([0-9a-f])([0-9a-f])/g, (_, a: string, b: string) => `%[${a}${a.toUpperCase()}][${b}${b.toUpperCase()}]`)}${char === ' ' ? '|\\+' : ''})`;
      })
      .join('');
    this.#patterns.push([new RegExp(pattern, 'g'), placeholder]);
  }

  /**
   * Registers client credentials as HTTP Basic sends them (RFC 6749 §2.3.1: base64 of the
   * form-encoded `id:secret`), in every base64 alphabet and with or without padding.
   */
  addBasicCredentials(id: string, secret: string, placeholder: string): void {
    const encodings = new Set([
      `${id}:${secret}`,
      `${new URLSearchParams({ v: id }).toString().slice(2)}:${new URLSearchParams({ v: secret }).toString().slice(2)}`,
      `${encodeURIComponent(id)}:${encodeURIComponent(secret)}`,
    ]);
    for (const pair of encodings) {
      const base64 = Buffer.from(pair, 'utf8').toString('base64');
      for (const form of [base64, base64.replace(/=+$/, ''), Buffer.from(pair, 'utf8').toString('base64url')])
        if (form.length >= 8) this.#secrets.set(form, placeholder);
    }
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
    for (const [pattern, placeholder] of this.#patterns) out = out.replace(pattern, placeholder);
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
