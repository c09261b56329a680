/** One challenge of a `WWW-Authenticate` header (RFC 9110 §11.6.1), e.g. RFC 6750 §3 `Bearer error="…"`. */
export interface AuthChallenge {
  /** The auth scheme as sent (compare case-insensitively). */
  readonly scheme: string;
  /** The auth-params, names lower-cased, quoted strings unescaped. */
  readonly params: Readonly<Record<string, string>>;
  /** The token68 form (`Basic dXNlcg==`), when the challenge uses it instead of auth-params. */
  readonly token68?: string;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+/;
const TOKEN68 = /^[A-Za-z0-9._~+/-]+=*/;

/**
 * Parses a `WWW-Authenticate` header value into its challenges. Lenient: a malformed tail ends the
 * parse and what was read so far is kept, because an error answer must never fail on its header.
 */
export function parseWwwAuthenticate(header: string): AuthChallenge[] {
  const challenges: { scheme: string; params: Record<string, string>; token68?: string }[] = [];
  let i = 0;
  const skipSpace = () => {
    while (header[i] === ' ' || header[i] === '\t') i++;
  };
  const read = (pattern: RegExp) => {
    const found = pattern.exec(header.slice(i));
    if (!found) return '';
    i += found[0].length;
    return found[0];
  };
  const quoted = () => {
    let value = '';
    i++; // opening quote
    while (i < header.length && header[i] !== '"') {
      if (header[i] === '\\' && i + 1 < header.length) i++;
      value += header[i];
      i++;
    }
    i++; // closing quote
    return value;
  };
  // Reads `name = value` at i; on anything else restores i and returns false.
  const param = (into: Record<string, string>) => {
    const start = i;
    skipSpace();
    const name = read(TOKEN);
    skipSpace();
    if (!name || header[i] !== '=') {
      i = start;
      return false;
    }
    i++;
    skipSpace();
    into[name.toLowerCase()] = header[i] === '"' ? quoted() : read(TOKEN);
    skipSpace();
    return true;
  };

  while (i < header.length) {
    skipSpace();
    if (header[i] === ',') {
      i++;
      continue;
    }
    const scheme = read(TOKEN);
    if (!scheme) break;
    const challenge: (typeof challenges)[number] = { scheme, params: {} };
    challenges.push(challenge);
    skipSpace();
    const start = i;
    const token68 = read(TOKEN68);
    skipSpace();
    if (token68 && (i >= header.length || header[i] === ',')) {
      challenge.token68 = token68;
      continue;
    }
    i = start;
    // auth-params, comma-separated, until something that is not `name=` (the next challenge).
    if (!param(challenge.params)) continue;
    for (;;) {
      const comma = i;
      if (header[i] !== ',') break;
      while (header[i] === ',' || header[i] === ' ' || header[i] === '\t') i++;
      if (!param(challenge.params)) {
        i = comma;
        break;
      }
    }
  }
  return challenges;
}

/** The first `Bearer` challenge (scheme compared case-insensitively) of a `WWW-Authenticate` value. */
export function bearerChallengeOf(header: string | null | undefined): AuthChallenge | undefined {
  if (!header) return undefined;
  return parseWwwAuthenticate(header).find((challenge) => challenge.scheme.toLowerCase() === 'bearer');
}
