import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import type { RegisterEntry } from '../../src/register-wire.js';

/**
 * A small stand-in for the certification service's register endpoints, on 127.0.0.1: GET /register
 * (a compact JWS, typ partner-register+jwt, signed with a test Ed25519 key) and
 * GET /.well-known/jwks.json, with ETag / If-None-Match and Cache-Control: max-age, as the service
 * serves them. Each register it signs carries `seq`, one higher than the last (as the service's). Tests change what it serves (partners, typ, the signing key, a tampered signature)
 * and count what it was asked.
 */

/** A partner the test register lists: the register's wire entry (src/register-wire.ts), writable. */
export type RegisterPartner = Omit<{ -readonly [K in keyof RegisterEntry]: RegisterEntry[K] }, 'scopes'> & {
  scopes: string[];
};

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

export interface RegisterServer {
  readonly url: string;
  readonly registerUrl: string;
  readonly jwksUrl: string;
  readonly key: string;
  /** What the next answers carry; change any field between requests. */
  readonly state: {
    partners: RegisterPartner[];
    maxAge: number;
    /** Seconds from `now()` to the register's exp. */
    ttlSeconds: number;
    typ: string;
    /** Sign with a key that is not in the JWKS. */
    foreignKey: boolean;
    /** Flip a byte of the signature. */
    tamper: boolean;
    /** Leave kid out of the header. */
    noKid: boolean;
    /** iat/exp are computed from this clock (epoch ms). */
    now: () => number;
    /** Extra seconds added to iat (a clock ahead: positive). */
    iatOffset: number;
    /** The seq of the next register signed; each signing takes it and adds one. */
    seq: number;
    /** Sign registers without seq (a service older than the gate). */
    omitSeq: boolean;
    /** While set, answers to /register wait for it (a register slow to answer). */
    hold: Promise<void> | undefined;
  };
  /**
   * Requests to /register: total, answered 304, and the If-None-Match values received; requests to
   * /register/partners/{id} by partner id (their 304s are counted in notModified too).
   */
  readonly asked: {
    register: number;
    notModified: number;
    ifNoneMatch: string[];
    jwks: number;
    partners: Record<string, number>;
  };
  /** Stops answering: the server closes (connections refused from then on). */
  close(): Promise<void>;
}

export async function startRegisterServer(options: { key?: string } = {}): Promise<RegisterServer> {
  const signing: KeyPair = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
  const foreign: KeyPair = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
  const kid = 'register-test-key';
  const jwk: JWK = { ...(await exportJWK(signing.publicKey)), kid, alg: 'EdDSA', use: 'sig' };
  const readerKey = options.key ?? 'rr_test_reader_key_0123456789';
  const state: RegisterServer['state'] = {
    partners: [],
    maxAge: 60,
    ttlSeconds: 300,
    typ: 'partner-register+jwt',
    foreignKey: false,
    tamper: false,
    noKid: false,
    now: Date.now,
    iatOffset: 0,
    seq: 1,
    omitSeq: false,
    hold: undefined,
  };
  const asked = {
    register: 0,
    notModified: 0,
    ifNoneMatch: [] as string[],
    jwks: 0,
    partners: {} as Record<string, number>,
  };
  let origin = '';

  async function sign(partners = state.partners): Promise<string> {
    const iat = Math.floor(state.now() / 1000) + state.iatOffset;
    const seq = state.seq;
    state.seq += 1;
    const jws = await new SignJWT({ partners, ...(state.omitSeq ? {} : { seq }) })
      .setProtectedHeader({ alg: 'EdDSA', typ: state.typ, ...(state.noKid ? {} : { kid }) })
      .setIssuer(origin)
      .setIssuedAt(iat)
      .setExpirationTime(Math.floor(state.now() / 1000) + state.ttlSeconds)
      .sign((state.foreignKey ? foreign : signing).privateKey);
    if (!state.tamper) return jws;
    const [header, payload, signature] = jws.split('.') as [string, string, string];
    const bytes = Buffer.from(signature, 'base64url');
    bytes[0] = (bytes[0] ?? 0) ^ 0x01;
    return `${header}.${payload}.${bytes.toString('base64url')}`;
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    if (req.url === '/.well-known/jwks.json') {
      asked.jwks += 1;
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ keys: [jwk] }));
    }
    // One partner's entry, as the service serves it: a register of that entry alone, or a 404 (with
    // the same max-age) when the partner is not in it.
    const one = /^\/register\/partners\/([^/?]+)$/.exec(req.url ?? '');
    if (req.url !== '/register' && !one) {
      res.writeHead(404, { 'content-type': 'application/problem+json' });
      return res.end('{"title":"not found"}');
    }
    const partnerId = one ? decodeURIComponent(one[1]!) : undefined;
    if (partnerId === undefined) asked.register += 1;
    else asked.partners[partnerId] = (asked.partners[partnerId] ?? 0) + 1;
    if (req.headers.authorization !== `Bearer ${readerKey}`) {
      res.writeHead(401, { 'content-type': 'application/problem+json', 'www-authenticate': 'Bearer' });
      return res.end('{"title":"a register reader key is needed"}');
    }
    const partners =
      partnerId === undefined ? state.partners : state.partners.filter((p) => p.partnerId === partnerId);
    if (partnerId !== undefined && partners.length === 0) {
      res.writeHead(404, {
        'content-type': 'application/problem+json',
        'cache-control': `max-age=${state.maxAge}`,
      });
      return res.end('{"title":"Not in the register"}');
    }
    // The ETag names what the register says (not its iat/exp), as a service's would.
    const etag = `"${createHash('sha256')
      .update(JSON.stringify([partners, state.typ, state.foreignKey, state.tamper, state.noKid]))
      .digest('base64url')
      .slice(0, 16)}"`;
    const cacheControl = `max-age=${state.maxAge}`;
    const ifNoneMatch = req.headers['if-none-match'];
    if (typeof ifNoneMatch === 'string') asked.ifNoneMatch.push(ifNoneMatch);
    if (ifNoneMatch === etag) {
      asked.notModified += 1;
      res.writeHead(304, { etag, 'cache-control': cacheControl });
      return res.end();
    }
    if (state.hold) await state.hold;
    const body = await sign(partners);
    res.writeHead(200, { 'content-type': 'application/jwt', etag, 'cache-control': cacheControl });
    res.end(body);
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      res.writeHead(500);
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // A test server stops by itself, whatever the test does.
  const timer = setTimeout(() => void close(), 120_000);
  timer.unref();
  let closing: Promise<void> | undefined;
  function close(): Promise<void> {
    clearTimeout(timer);
    closing ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    return closing;
  }
  return {
    url: origin,
    registerUrl: `${origin}/register`,
    jwksUrl: `${origin}/.well-known/jwks.json`,
    key: readerKey,
    state,
    asked,
    close,
  };
}
