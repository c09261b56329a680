import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { type DecodedJwt, decodeJwt } from '../../common/jwt.js';
import { ConformanceError } from '../../errors.js';

let issuerKey: ReturnType<typeof generateKeyPair> | undefined;

/** A request the suite's own issuer received (from the target, when it fetched the suite's keys). */
export interface IssuerHit {
  readonly method: string;
  readonly path: string;
  readonly at: number;
}

/**
 * An OAuth authorization server of the suite's own, on a port of its own: RFC 8414 and OpenID metadata
 * and a JWKS with a key the target never trusted. Tokens it signs copy a valid token's claims, so a
 * target that takes keys from the token (its `iss`, its `jku`) instead of its own issuer accepts them.
 */
export class SuiteIssuer {
  readonly url: string;
  readonly jwksUrl: string;
  readonly hits: IssuerHit[] = [];
  readonly #server: Server;
  readonly #key: CryptoKey;
  readonly #jwk: JWK;

  private constructor(server: Server, url: string, key: CryptoKey, jwk: JWK) {
    this.#server = server;
    this.url = url;
    this.jwksUrl = `${url}/.well-known/jwks.json`;
    this.#key = key;
    this.#jwk = jwk;
  }

  /**
   * Starts the issuer on `host` (default 127.0.0.1), port 0. `advertise` is the host name the target
   * must use to reach it (default: `host`).
   */
  static async start(options: { host?: string; advertise?: string } = {}): Promise<SuiteIssuer> {
    const host = options.host ?? '127.0.0.1';
    // One key per process (RSA generation is slow); each issuer names it by its own kid.
    issuerKey ??= generateKeyPair('RS256', { extractable: true });
    const pair = await issuerKey;
    const kid = `conformance-issuer-${randomUUID()}`;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid, alg: 'RS256', use: 'sig' };
    let self: SuiteIssuer | undefined;
    // Each attack has its own issuer path (`/<attack>`), so that a fetch is attributed to the attack that
    // caused it even when checks run at once: OpenID discovery appends the well-known suffix to the issuer
    // (`/<attack>/.well-known/openid-configuration`), RFC 8414 inserts it after the host
    // (`/.well-known/oauth-authorization-server/<attack>`).
    const server = createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      self?.hits.push({ method: req.method ?? 'GET', path, at: Date.now() });
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
        res.end(JSON.stringify(body));
      };
      if (/^(\/[\w-]+)?\/\.well-known\/jwks\.json$/.test(path)) return send(200, { keys: [jwk] });
      const oidc = /^(\/[\w-]+)?\/\.well-known\/openid-configuration$/.exec(path);
      const rfc8414 = /^\/\.well-known\/oauth-authorization-server(\/[\w-]+)?$/.exec(path);
      if (oidc || rfc8414) {
        const base = `${self?.url}${oidc?.[1] ?? rfc8414?.[1] ?? ''}`;
        return send(200, {
          issuer: base,
          jwks_uri: `${base}/.well-known/jwks.json`,
          token_endpoint: `${base}/oauth/token`,
          response_types_supported: ['token'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
        });
      }
      send(404, { error: 'not_found' });
    });
    server.requestTimeout = 10_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, host, () => resolve());
    });
    server.unref();
    const { port } = server.address() as AddressInfo;
    const name = options.advertise ?? host;
    const shown = name.includes(':') && !name.startsWith('[') ? `[${name}]` : name;
    self = new SuiteIssuer(server, `http://${shown}:${port}`, pair.privateKey, jwk);
    return self;
  }

  get kid(): string {
    return this.#jwk.kid!;
  }

  /**
   * The same claims as `token`, with `iss` set to this issuer's `/foreign-issuer` path (the token's
   * trailing-slash habit kept), signed by its key.
   */
  foreignIssuerToken(token: string): Promise<string> {
    const { header, payload } = this.#decode(token);
    const base = `${this.url}/foreign-issuer`;
    const iss = typeof payload.iss === 'string' && payload.iss.endsWith('/') ? `${base}/` : base;
    return this.#sign({ ...payload, iss }, { ...this.#header(header), kid: this.kid });
  }

  /** The same claims as `token`, signed by this issuer's key, with a `jku` header naming its `/jku` key set. */
  jkuToken(token: string): Promise<string> {
    const { header, payload } = this.#decode(token);
    return this.#sign(payload, {
      ...this.#header(header),
      kid: this.kid,
      jku: `${this.url}/jku/.well-known/jwks.json`,
    });
  }

  /** The requests for a key set or metadata under an attack's path (`foreign-issuer`, `jku`). */
  fetchesOf(attack: string): IssuerHit[] {
    return this.hits.filter(
      (hit) =>
        hit.path.startsWith(`/${attack}/.well-known/`) ||
        hit.path === `/.well-known/oauth-authorization-server/${attack}`,
    );
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.closeAllConnections();
      this.#server.close(() => resolve());
    });
  }

  #decode(token: string): DecodedJwt {
    const decoded = decodeJwt(token);
    if (!decoded)
      throw new ConformanceError(
        'ERR_TOKEN_NOT_JWS',
        'the access token is not a compact JWS (header.payload.signature)',
      );
    return decoded;
  }

  #header(header: Record<string, unknown>): Record<string, unknown> {
    const { kid: _kid, jwk: _jwk, jku: _jku, x5u: _x5u, x5c: _x5c, ...rest } = header;
    return { ...rest, alg: 'RS256' };
  }

  #sign(payload: Record<string, unknown>, header: Record<string, unknown>): Promise<string> {
    return new SignJWT(payload).setProtectedHeader(header as { alg: string }).sign(this.#key);
  }
}
