import type { Challenge } from './challenge.js';
import { ConfigurationError } from './errors.js';

export type { Challenge } from './challenge.js';

const TCHAR = /[!#$%&'*+\-.^_`|~0-9A-Za-z]/;
const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*/;

class Parser {
  i = 0;
  constructor(readonly s: string) {}

  get done(): boolean {
    return this.i >= this.s.length;
  }
  peek(): string | undefined {
    return this.s[this.i];
  }
  skipWs(): number {
    const start = this.i;
    while (this.s[this.i] === ' ' || this.s[this.i] === '\t') this.i++;
    return this.i - start;
  }
  token(): string {
    const start = this.i;
    while (this.i < this.s.length && TCHAR.test(this.s[this.i] as string)) this.i++;
    return this.s.slice(start, this.i);
  }
  quoted(): string {
    // the opening quote is at this.i
    this.i++;
    let out = '';
    while (this.i < this.s.length) {
      const c = this.s[this.i] as string;
      if (c === '"') {
        this.i++;
        return out;
      }
      if (c === '\\') {
        const next = this.s[this.i + 1];
        if (next === undefined) break;
        out += next;
        this.i += 2;
        continue;
      }
      out += c;
      this.i++;
    }
    throw this.error('an unterminated quoted-string');
  }
  error(what: string): ConfigurationError {
    return new ConfigurationError(
      `WWW-Authenticate header is malformed: ${what} at position ${this.i}; expected challenges as in RFC 9110 §11.6.1.`,
    );
  }
  /** After OWS: true at end of input or at a comma (consumed). */
  endOfItem(): boolean {
    this.skipWs();
    if (this.done) return true;
    if (this.peek() === ',') {
      this.i++;
      return true;
    }
    return false;
  }
  /** Skips empty list elements (`, ,`) and whitespace. */
  skipSeparators(): void {
    while (!this.done && (this.peek() === ',' || this.peek() === ' ' || this.peek() === '\t')) this.i++;
  }
  /** True when the next list item is `name = value` (an auth-param) rather than a new challenge. */
  atAuthParam(): boolean {
    const save = this.i;
    const name = this.token();
    this.skipWs();
    const result = name !== '' && this.peek() === '=';
    this.i = save;
    return result;
  }
}

/** Parses a `WWW-Authenticate` header value into its challenges; throws a ConfigurationError (ERR_CONFIGURATION) when malformed. */
export function parseWwwAuthenticate(header: string): Challenge[] {
  const p = new Parser(header);
  const challenges: Challenge[] = [];
  p.skipSeparators();
  while (!p.done) {
    const scheme = p.token();
    if (scheme === '')
      throw p.error(`an unexpected ${JSON.stringify(p.peek())} where an auth-scheme should start`);
    const challenge: Challenge = { scheme, params: {} };
    challenges.push(challenge);
    const spaces = p.skipWs();
    if (p.done || p.peek() === ',') {
      p.skipSeparators();
      continue;
    }
    if (spaces === 0) throw p.error(`a missing space after the auth-scheme ${JSON.stringify(scheme)}`);
    const rest = p.s.slice(p.i);
    const t68 = TOKEN68.exec(rest);
    if (t68) {
      const save = p.i;
      p.i += t68[0].length;
      if (p.endOfItem()) {
        challenge.token68 = t68[0];
        p.skipSeparators();
        continue;
      }
      p.i = save;
    }
    // #auth-param: name=value items until the next item that starts a new challenge.
    for (;;) {
      const name = p.token().toLowerCase();
      if (name === '') throw p.error('a missing auth-param name');
      p.skipWs();
      if (p.peek() !== '=') throw p.error(`a missing "=" after the auth-param ${JSON.stringify(name)}`);
      p.i++;
      p.skipWs();
      let value: string;
      if (p.peek() === '"') value = p.quoted();
      else {
        value = p.token();
        if (value === '') throw p.error(`a missing value for the auth-param ${JSON.stringify(name)}`);
      }
      // RFC 9110: each parameter name occurs once per challenge; keep the first.
      if (!Object.hasOwn(challenge.params, name)) {
        // defineProperty, not assignment: a parameter named __proto__ must stay a plain key.
        Object.defineProperty(challenge.params, name, {
          value,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      if (!p.endOfItem()) throw p.error(`unexpected text after the auth-param ${JSON.stringify(name)}`);
      p.skipSeparators();
      if (p.done || !p.atAuthParam()) break;
    }
  }
  return challenges;
}

/** The first Bearer challenge (scheme compared case-insensitively) of a header, if any. */
export function findBearerChallenge(header: string | null): Challenge | undefined {
  if (header === null) return undefined;
  let challenges: Challenge[];
  try {
    challenges = parseWwwAuthenticate(header);
  } catch {
    // A malformed header that still names Bearer first is treated as a bare Bearer challenge.
    return /^\s*bearer(\s|,|$)/i.test(header) ? { scheme: 'Bearer', params: {} } : undefined;
  }
  return challenges.find((c) => c.scheme.toLowerCase() === 'bearer');
}
