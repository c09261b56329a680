import { inspect } from 'node:util';

/** A token shortened to its last 6 characters, the only form a token may take in any output. */
export function shorten(token: string): string {
  return `…${token.slice(-6)}`;
}

// Anything shaped like a compact JWS or a piece of one: header.payload[.signature], the signature
// possibly empty (alg none), or cut off (a malformed value built from a token).
const jwtPattern = /eyJ[A-Za-z0-9_-]{4,}(?:\.[A-Za-z0-9_-]*){1,2}/g;

/** One character of a secret: itself, its UTF-8 bytes percent-encoded (lowercase hex), and whether it is a space. */
interface SecretChar {
  literal: string;
  encoded: string;
  space: boolean;
}

/** Whether `text` holds `encoded` (`%` and lowercase hex) at `at`, each hex letter in either case. */
function holdsEncoded(text: string, at: number, encoded: string): boolean {
  if (at + encoded.length > text.length) return false;
  for (let k = 0; k < encoded.length; k += 1) {
    const want = encoded.charCodeAt(k);
    const got = text.charCodeAt(at + k);
    // 'a'–'f' also match 'A'–'F'; '%' and digits match themselves.
    if (got !== want && !(want >= 97 && want <= 102 && got === want - 32)) return false;
  }
  return true;
}

/**
 * Where a match of `chars` that starts at `start` ends (-1: none): each character literal, then
 * percent-encoded, then (a space) '+', tried in that order and backtracking as a regular expression of
 * those alternatives would, so the match found is the one it finds (only a literal '%', which may also
 * begin its own encoding, ever leaves a second way to try).
 */
function matchEnd(text: string, start: number, chars: readonly SecretChar[], percent: boolean): number {
  const n = chars.length;
  if (!percent) {
    // Without a '%' in the secret, at most one alternative of a character can match where it stands.
    let p = start;
    for (const char of chars)
      if (text.startsWith(char.literal, p)) p += char.literal.length;
      else if (holdsEncoded(text, p, char.encoded)) p += char.encoded.length;
      else if (char.space && text.charCodeAt(p) === 43) p += 1;
      else return -1;
    return p;
  }
  const at: number[] = [start];
  const next: number[] = [0];
  let j = 0;
  while (j >= 0) {
    if (j === n) return at[n]!;
    const p = at[j]!;
    const char = chars[j]!;
    let length = -1;
    while (length < 0 && next[j]! < 3) {
      const alternative = next[j]!;
      next[j] = alternative + 1;
      if (alternative === 0 && text.startsWith(char.literal, p)) length = char.literal.length;
      else if (alternative === 1 && holdsEncoded(text, p, char.encoded)) length = char.encoded.length;
      else if (alternative === 2 && char.space && text.charCodeAt(p) === 43) length = 1;
    }
    if (length >= 0) {
      at[j + 1] = p + length;
      next[j + 1] = 0;
      j += 1;
    } else j -= 1;
  }
  return -1;
}

/** A replacement string's `$$`, `$&`, `` $` `` and `$'` for a match of `text` (as `String.replace` reads them; no groups). */
function substitution(placeholder: string, text: string, start: number, end: number): string {
  if (!placeholder.includes('$')) return placeholder;
  return placeholder.replace(/\$([$&`'])/g, (_, sign: string) =>
    sign === '$'
      ? '$'
      : sign === '&'
        ? text.slice(start, end)
        : sign === '`'
          ? text.slice(0, start)
          : text.slice(end),
  );
}

/**
 * `text` with every match of `chars` (see `matchEnd`; `percent`: the secret holds a '%'), left to right and not overlapping, replaced by
 * `placeholder`: what `text.replace(pattern, placeholder)` gave with one regular expression per secret,
 * without compiling one (a new run's first texts paid milliseconds each for that).
 */
function replaceEncoded(
  text: string,
  chars: readonly SecretChar[],
  percent: boolean,
  placeholder: string,
): string {
  const first = chars[0]!;
  const firstUnit = first.literal.charCodeAt(0);
  let out = '';
  let kept = 0;
  for (let s = 0; s < text.length; s += 1) {
    const unit = text.charCodeAt(s);
    if (unit !== firstUnit && unit !== 37 && !(first.space && unit === 43)) continue;
    const end = matchEnd(text, s, chars, percent);
    if (end < 0) continue;
    out += text.slice(kept, s) + substitution(placeholder, text, s, end);
    kept = end;
    s = end - 1;
  }
  return kept === 0 ? text : out + text.slice(kept);
}

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
  readonly #patterns: Array<{
    chars: SecretChar[];
    placeholder: string;
    value: string;
    space: boolean;
    percent: boolean;
  }> = [];

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
    this.#patterns.push({
      chars: [...value].map((char) => ({
        literal: char,
        encoded: [...Buffer.from(char, 'utf8')]
          .map((byte) => `%${byte.toString(16).padStart(2, '0')}`)
          .join(''),
        space: char === ' ',
      })),
      placeholder,
      value,
      space: value.includes(' '),
      percent: value.includes('%'),
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
    for (const { chars, placeholder, value, space, percent } of this.#patterns) {
      // A match is at least as long as the secret, and is either the secret itself or holds a %XX
      // (or a '+' for a space): without one of those in the text, it cannot match.
      if (out.length < value.length) continue;
      if (out.includes(value) || out.includes('%') || (space && out.includes('+')))
        out = replaceEncoded(out, chars, percent, placeholder);
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
