/**
 * A strict reader of `WWW-Authenticate` (RFC 9110 §11.6.1, §11.2) that, unlike a client's lenient
 * parser, reports every syntax problem, plus the RFC 6750 §3 rules of the Bearer challenge.
 */
export interface Challenge {
  scheme: string;
  params: Record<string, string>;
  token68?: string;
}

export interface ParsedChallenges {
  challenges: Challenge[];
  /** Syntax problems, each a short sentence; empty when the header is well-formed. */
  problems: string[];
}

const tchar = /[!#$%&'*+\-.^_`|~0-9A-Za-z]/;
const token68char = /[A-Za-z0-9\-._~+/]/;

class Reader {
  pos = 0;
  constructor(readonly text: string) {}
  get done(): boolean {
    return this.pos >= this.text.length;
  }
  peek(): string {
    return this.text[this.pos] ?? '';
  }
  skipWs(): number {
    const start = this.pos;
    while (this.peek() === ' ' || this.peek() === '\t') this.pos += 1;
    return this.pos - start;
  }
  token(): string {
    const start = this.pos;
    while (!this.done && tchar.test(this.peek())) this.pos += 1;
    return this.text.slice(start, this.pos);
  }
}

function quotedString(reader: Reader, problems: string[]): string | undefined {
  // RFC 9110 §5.6.4: DQUOTE *( qdtext / quoted-pair ) DQUOTE
  reader.pos += 1;
  let value = '';
  while (!reader.done) {
    const c = reader.peek();
    if (c === '"') {
      reader.pos += 1;
      return value;
    }
    if (c === '\\') {
      reader.pos += 1;
      value += reader.peek();
      reader.pos += 1;
      continue;
    }
    value += c;
    reader.pos += 1;
  }
  problems.push('a quoted-string is not closed');
  return undefined;
}

/** Tries to read `token BWS "=" BWS value` at the reader; rewinds and returns undefined when absent. */
function authParam(reader: Reader, problems: string[]): [string, string] | undefined {
  const start = reader.pos;
  const name = reader.token();
  if (name.length === 0) return undefined;
  reader.skipWs();
  if (reader.peek() !== '=') {
    reader.pos = start;
    return undefined;
  }
  reader.pos += 1;
  // token68 ends in "=": "abc==" is not a parameter
  if (reader.peek() === '=' || reader.peek() === ',' || reader.done) {
    reader.pos = start;
    return undefined;
  }
  reader.skipWs();
  if (reader.peek() === '"') {
    const value = quotedString(reader, problems);
    return value === undefined ? undefined : [name.toLowerCase(), value];
  }
  const value = reader.token();
  if (value.length === 0) {
    problems.push(`the parameter ${name} has no value`);
    return undefined;
  }
  return [name.toLowerCase(), value];
}

/** Parses a `WWW-Authenticate` field value into its challenges, collecting syntax problems. */
export function parseChallenges(header: string): ParsedChallenges {
  const reader = new Reader(header);
  const challenges: Challenge[] = [];
  const problems: string[] = [];
  while (!reader.done) {
    reader.skipWs();
    if (reader.peek() === ',') {
      reader.pos += 1;
      continue;
    }
    if (reader.done) break;
    const scheme = reader.token();
    if (scheme.length === 0) {
      problems.push(`unexpected character ${JSON.stringify(reader.peek())} at ${reader.pos}`);
      break;
    }
    const challenge: Challenge = { scheme, params: {} };
    challenges.push(challenge);
    if (reader.skipWs() === 0 || reader.done || reader.peek() === ',') continue;
    // token68 (RFC 9110 §11.2) when what follows is not a name=value parameter
    const before = reader.pos;
    if (!authParam(reader, [])) {
      reader.pos = before;
      while (!reader.done && token68char.test(reader.peek())) reader.pos += 1;
      while (reader.peek() === '=') reader.pos += 1;
      const candidate = header.slice(before, reader.pos);
      reader.skipWs();
      if (candidate.length > 0 && (reader.done || reader.peek() === ',')) {
        challenge.token68 = candidate;
        continue;
      }
    }
    reader.pos = before;
    // #auth-param
    for (;;) {
      const param = authParam(reader, problems);
      if (!param) {
        problems.push(`expected name=value after ${scheme} at ${reader.pos}`);
        return { challenges, problems };
      }
      const [name, value] = param;
      if (Object.hasOwn(challenge.params, name)) problems.push(`the parameter ${name} appears twice`);
      challenge.params[name] = value;
      reader.skipWs();
      if (reader.done) break;
      if (reader.peek() !== ',') {
        problems.push(`expected "," at ${reader.pos}`);
        return { challenges, problems };
      }
      // A comma: either another parameter of this challenge or the next challenge.
      while (reader.peek() === ',' || reader.peek() === ' ' || reader.peek() === '\t') reader.pos += 1;
      if (reader.done) break;
      const save = reader.pos;
      const next = reader.token();
      reader.skipWs();
      const isParam = next.length > 0 && reader.peek() === '=';
      reader.pos = save;
      if (!isParam) break;
    }
  }
  if (challenges.length === 0) problems.push('no challenge');
  return { challenges, problems };
}

const bearerErrors = new Set(['invalid_request', 'invalid_token', 'insufficient_scope']);
// RFC 6750 §3: error and error_description values use %x20-21 / %x23-5B / %x5D-7E.
const attributeChars = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

export interface BearerChallengeResult {
  /** The Bearer challenge (scheme compared case-insensitively), when there is one. */
  challenge?: Challenge;
  /** Problems with the header or the Bearer challenge, per RFC 9110 §11.6.1 and RFC 6750 §3. */
  problems: string[];
}

/** Reads the Bearer challenge of an answer's `WWW-Authenticate` header. */
export function bearerChallengeOf(headers: Headers): BearerChallengeResult {
  const value = headers.get('www-authenticate');
  if (value === null) return { problems: ['no WWW-Authenticate header'] };
  const parsed = parseChallenges(value);
  const problems = [...parsed.problems];
  const challenge = parsed.challenges.find((c) => c.scheme.toLowerCase() === 'bearer');
  if (!challenge) return { problems: [...problems, `no Bearer challenge in ${JSON.stringify(value)}`] };
  if (challenge.token68 !== undefined)
    problems.push('the Bearer challenge uses token68 instead of auth-params');
  const { error } = challenge.params;
  if (error !== undefined && !bearerErrors.has(error))
    problems.push(`unknown error code ${JSON.stringify(error)}`);
  for (const name of ['error', 'error_description', 'scope'] as const) {
    const attribute = challenge.params[name];
    if (attribute !== undefined && !attributeChars.test(attribute))
      problems.push(`the ${name} value holds characters RFC 6750 §3 excludes`);
  }
  return { challenge, problems };
}
