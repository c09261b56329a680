import type { IncomingMessage } from 'node:http';
import { mediaTypeOfValue as mediaType } from '../../common/media-type.js';
import type { Redactor } from '../../common/redact.js';
import type { BodyKind, IssuedToken, Leak, RecordedExchange, TokenForm } from '../session.js';

/** Largest request body the stage reads (the mock's own limit); past it the request is refused. */
export const maxBodyBytes = 1024 * 1024;
/** How much of a body the session keeps, redacted. */
export const keptText = 300;

/** Text cut to what a session keeps, saying how long it was. */
export const cut = (text: string) =>
  text.length > keptText ? `${text.slice(0, keptText)}…[${text.length} chars]` : text;

/**
 * The request bytes all requests being read may hold at once: a client that opens many connections,
 * each with a body just under the per-request limit, meets this instead of the stage's memory.
 */
export class ByteBudget {
  held = 0;
  readonly max: number;
  constructor(max: number) {
    this.max = max;
  }
}

/** Default of ByteBudget: 64 MiB of request bodies held at once. */
export const defaultMaxHeldBytes = 64 * 1024 * 1024;

/**
 * Reads a request body: at most 1 MiB (`too-large`), and only while the stage's budget allows
 * (`over-budget`). The bytes are released from the budget with `release()` once the request is done.
 */
export function readBody(
  req: IncomingMessage,
  budget: ByteBudget,
): Promise<{ body: Buffer; release(): void } | 'too-large' | 'over-budget'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const release = () => {
      budget.held -= size;
      size = 0;
    };
    const stop = (why: 'too-large' | 'over-budget') => {
      req.removeAllListeners('data');
      req.resume();
      chunks.length = 0;
      release();
      resolve(why);
    };
    req.on('data', (chunk: Buffer) => {
      if (size + chunk.length > maxBodyBytes) return stop('too-large');
      if (budget.held + chunk.length > budget.max) return stop('over-budget');
      size += chunk.length;
      budget.held += chunk.length;
      chunks.push(chunk);
    });
    req.on('end', () => resolve({ body: Buffer.concat(chunks), release }));
    req.on('error', (error) => {
      release();
      reject(error);
    });
  });
}

export function bodyKindOf(body: Buffer, contentType: string | undefined): BodyKind {
  if (body.length === 0) return 'none';
  const type = mediaType(contentType);
  if (type === 'application/x-www-form-urlencoded') return 'form';
  if (type === 'application/json' || type.endsWith('+json')) {
    try {
      const value: unknown = JSON.parse(body.toString('utf8'));
      return typeof value === 'object' && value !== null && !Array.isArray(value)
        ? 'json-object'
        : 'json-other';
    } catch {
      return 'invalid-json';
    }
  }
  return 'other';
}

export function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

export function basicCredentials(header: string | undefined): { id: string; secret: string } | undefined {
  const match = /^basic\s+(\S+)\s*$/i.exec(header ?? '');
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { id: safeDecode(decoded.slice(0, colon)), secret: safeDecode(decoded.slice(colon + 1)) };
}

export const jwtCandidates = /[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g;

// RFC 6750 §2.1: credentials = "Bearer" 1*SP b64token (the scheme is case-insensitive, RFC 9110 §11.1).
export const bearerPattern = /^(\S+)(?: +([A-Za-z0-9\-._~+/]+=*))?$/;

/**
 * How the stage reads a request for the record: what it leaks, its token-request form, its bearer
 * header, the headers kept — every value redacted before it is kept.
 */
export function requestReader(
  client: { clientId: string; clientSecret: string },
  redactor: Redactor,
  tokens: { byValue(token: string): IssuedToken | undefined },
) {
  const redact = (text: string) => redactor.redact(text);
  function leaksOf(
    server: 'auth' | 'api',
    target: string,
    headers: IncomingMessage['headers'],
    body: string,
  ): Leak[] {
    const leaks = new Set<Leak>();
    const decodedTarget = safeDecode(target);
    const inText = (value: string, text: string) => value.length > 0 && text.includes(value);
    const secret = client.clientSecret;
    if (inText(secret, target) || inText(secret, decodedTarget)) leaks.add('secret-in-url');
    if (inText(client.clientId, target) || inText(client.clientId, decodedTarget))
      leaks.add('client-id-in-url');
    // Issued tokens are JWTs: anything JWT-shaped in a URL is a token there, issued or not.
    if (/eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]+/.test(decodedTarget)) leaks.add('token-in-url');
    if (server === 'api') {
      for (const [name, value] of Object.entries(headers)) {
        const text = Array.isArray(value) ? value.join(', ') : (value ?? '');
        if (inText(secret, text) || inText(secret, safeDecode(text))) leaks.add('secret-in-api-header');
        if (name === 'authorization' && basicCredentials(text)?.secret === secret)
          leaks.add('secret-in-api-header');
      }
      if (inText(secret, body) || inText(secret, safeDecode(body))) leaks.add('secret-in-api-body');
      // Look up each JWT-shaped run of the body (not every token ever issued: a token per call makes thousands).
      for (const candidate of body.match(jwtCandidates) ?? [])
        if (tokens.byValue(candidate)) leaks.add('token-in-body');
    }
    return [...leaks];
  }

  function tokenFormOf(body: string, headers: IncomingMessage['headers']): TokenForm {
    const params = new URLSearchParams(body);
    const counts = new Map<string, number>();
    for (const key of params.keys()) counts.set(key, (counts.get(key) ?? 0) + 1);
    const basic = basicCredentials(headers.authorization);
    const inBody = params.has('client_id') || params.has('client_secret');
    const id = basic?.id ?? params.get('client_id') ?? undefined;
    const secret = basic?.secret ?? params.get('client_secret') ?? undefined;
    // The fields are kept redacted, as every recorded value is: a secret sent in one never lands in the session.
    return {
      ...(params.has('grant_type') && { grantType: redact(params.get('grant_type')!) }),
      ...(params.has('scope') && { scope: redact(params.get('scope')!) }),
      ...(params.has('audience') && { audience: redact(params.get('audience')!) }),
      resource: params.getAll('resource').map(redact),
      clientAuth: basic && inBody ? 'both' : basic ? 'basic' : inBody ? 'body' : 'none',
      clientIdMatches: id === client.clientId,
      secretMatches: secret === client.clientSecret,
      repeated: [...counts].filter(([, count]) => count > 1).map(([key]) => redact(key)),
    };
  }

  function bearerOf(header: string | undefined): RecordedExchange['bearer'] {
    if (header === undefined) return undefined;
    const match = bearerPattern.exec(header);
    const scheme = (match?.[1] ?? header.split(/\s/)[0] ?? '').slice(0, 20);
    const token = match?.[2];
    const wellFormed = scheme.toLowerCase() === 'bearer' && token !== undefined;
    const issued = token === undefined ? undefined : tokens.byValue(token);
    return {
      scheme: redact(scheme),
      wellFormed,
      ...(issued && { token: issued.ref }),
      ...(wellFormed && !issued && { unknownToken: true }),
    };
  }

  function keptHeaders(headers: IncomingMessage['headers']): Record<string, string> {
    const kept: Record<string, string> = {};
    for (const name of ['authorization', 'content-type', 'accept', 'idempotency-key']) {
      const value = headers[name];
      if (typeof value !== 'string') continue;
      // HTTP Basic credentials are never kept, whoever's they are (a production secret sent by mistake
      // included): only whether they were this client's.
      const basic = name === 'authorization' ? basicCredentials(value) : undefined;
      kept[name] = basic
        ? `Basic [credentials: client id ${basic.id === client.clientId ? 'matches' : 'does not match'}, secret ${basic.secret === client.clientSecret ? 'matches' : 'does not match'}]`
        : cut(redact(value));
    }
    return kept;
  }

  /**
   * A request body or target as the session keeps it: every registered secret redacted, and the value
   * of any credential parameter replaced whatever it is (a secret the stage does not know included).
   */
  function keptValue(text: string): string {
    return redact(text).replace(
      /(^|[?&])(client_secret|client_assertion|password)=([^&#]*)/gi,
      (_, lead: string, name: string) => `${lead}${name}=[redacted]`,
    );
  }

  return { redact, leaksOf, tokenFormOf, bearerOf, keptHeaders, keptValue };
}
