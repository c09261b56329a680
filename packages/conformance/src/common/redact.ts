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
  /** `#secrets` longest first (equal lengths in registration order): sorted once after each registration. */
  #ordered: Array<[string, string]> | undefined;
  readonly #tokens = new Set<string>();
  /** The first 3 characters of every registered token: a text without any of them holds no token. */
  readonly #tokenHeads = new Set<string>();
  /** Secrets matched character by character, each literal or percent-encoded. */
  readonly #patterns: Array<{ pattern: RegExp; placeholder: string; value: string; space: boolean }> = [];

  /**
   * Registers a secret (client secret, client id) and the placeholder that replaces it, in every
   * encoding a client may send it in: raw, percent-encoded (any characters, either hex case) and
   * form-encoded.
   */
  addSecret(value: string, placeholder: string): void {
    if (value.length < 4) return;
    this.#ordered = undefined;
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
    this.#patterns.push({
      pattern: new RegExp(pattern, 'g'),
      placeholder,
      value,
      space: value.includes(' '),
    });
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
    this.#ordered = undefined;
    for (const pair of encodings) {
      const base64 = Buffer.from(pair, 'utf8').toString('base64');
      for (const form of [base64, base64.replace(/=+$/, ''), Buffer.from(pair, 'utf8').toString('base64url')])
        if (form.length >= 8) this.#secrets.set(form, placeholder);
    }
  }

  /** Registers an access token that may not be JWT-shaped (an opaque token). */
  addToken(value: string): void {
    if (value.length < 8) return;
    this.#tokens.add(value);
    this.#tokenHeads.add(value.slice(0, 3));
  }

  /** The placeholder of a registered secret, if it is one. */
  placeholderOf(value: string): string | undefined {
    return this.#secrets.get(value);
  }

  /**
   * Every step runs on the text the step before left (a replacement may make or break a later match),
   * in the same order as ever; a step is skipped only when the text cannot hold a match of it, which
   * leaves the output unchanged (test/common/redact-equivalence.test.ts holds it to the earlier code).
   */
  redact(text: string): string {
    let out = text;
    // Longest first, so that a secret containing another is replaced whole.
    this.#ordered ??= [...this.#secrets].sort((a, b) => b[0].length - a[0].length);
    for (const [value, placeholder] of this.#ordered)
      if (out.length >= value.length && out.includes(value)) out = out.split(value).join(placeholder);
    for (const { pattern, placeholder, value, space } of this.#patterns) {
      // A match is at least as long as the secret, and is either the secret itself or holds a %XX
      // (or a '+' for a space): without one of those in the text, the pattern cannot match.
      if (out.length < value.length) continue;
      if (out.includes(value) || out.includes('%') || (space && out.includes('+')))
        out = out.replace(pattern, placeholder);
    }
    if (this.#tokens.size > 0 && this.#holdsAHead(out))
      for (const token of this.#tokens)
        if (out.length >= token.length && out.includes(token)) out = out.split(token).join(shorten(token));
    return out.includes('eyJ') ? out.replace(jwtPattern, (match) => shorten(match)) : out;
  }

  #holdsAHead(text: string): boolean {
    for (const head of this.#tokenHeads) if (text.includes(head)) return true;
    return false;
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
