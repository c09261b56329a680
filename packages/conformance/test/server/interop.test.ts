import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import { expressjwt, type GetVerificationKey, type Request as JwtRequest } from 'express-jwt';
import { exportJWK, generateKeyPair } from 'jose';
import jwksRsa from 'jwks-rsa';
import Provider, { errors } from 'oidc-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CheckResult, Report } from '../../src/common/report.js';
import { exitCodeFor } from '../../src/common/report.js';
import { runConformance } from '../../src/server/run.js';

/**
 * Interop: real third-party servers, wired as their READMEs show, on loopback.
 * - Token server: panva's oidc-provider 8 (client_credentials, RFC 8707 resource indicators, JWT access
 *   tokens for the API as the default resource, a partnerId claim via extraTokenClaims).
 * - API: Express 5 + express-jwt 8 + jwks-rsa 4 (its README's wiring: jwksUri, audience, issuer,
 *   RS256; its README's getToken that also reads ?access_token=), a scope check and a partner check.
 * - A faulty API: the same middleware taking the signing key from the token's own `iss` (discovery,
 *   then its jwks_uri) without an issuer allow-list.
 */
const allScopes = ['read:loans', 'create:loan_draft', 'create:journal_update', 'create:repayment'];
const partners = [
  {
    clientId: 'interop-a',
    clientSecret: 'interop-a-secret-0123456789',
    partnerId: 'partner-a',
    scope: allScopes,
  },
  {
    clientId: 'interop-b',
    clientSecret: 'interop-b-secret-0123456789',
    partnerId: 'partner-b',
    scope: allScopes,
  },
  // A client authorised for two scopes: oidc-provider answers invalid_scope when asked for more.
  {
    clientId: 'interop-c',
    clientSecret: 'interop-c-secret-0123456789',
    partnerId: 'partner-c',
    scope: ['read:loans', 'create:loan_draft'],
  },
];
const routes: Record<string, { method: 'get' | 'post'; scope: string }> = {
  loans: { method: 'get', scope: 'read:loans' },
  loan_draft: { method: 'post', scope: 'create:loan_draft' },
  journals: { method: 'post', scope: 'create:journal_update' },
  repayments: { method: 'post', scope: 'create:repayment' },
};

const servers: Server[] = [];
let issuer: string;
let apiUrl: string;
let faultyApiUrl: string;
/** Every POST with a body the APIs received on a create path. */
const creates: string[] = [];

async function listen(app: (req: never, res: never) => void): Promise<string> {
  const { createServer } = await import('node:http');
  const server = createServer(app as never);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The API of express-jwt's README, with the scope and partner checks a lending API adds. */
function api(secret: GetVerificationKey | ReturnType<typeof jwksRsa.expressJwtSecret>, checkIssuer: boolean) {
  const app = express();
  app.use(express.json());
  app.use(express.urlencoded({ extended: false }));
  app.use((req, _res, next) => {
    if (req.method === 'POST' && req.headers['content-length'] !== undefined)
      creates.push(`${req.method} ${req.path}`);
    next();
  });
  app.use(
    '/v3/partner/:partnerId',
    expressjwt({
      secret: secret as GetVerificationKey,
      algorithms: ['RS256'],
      ...(checkIssuer ? { issuer, audience: apiUrl } : {}),
      // express-jwt's README: "fromHeaderOrQuerystring" (RFC 6750 §2.3 allows it: MAY).
      getToken: (req) => {
        const [scheme, token] = (req.headers.authorization ?? '').split(' ');
        if (scheme?.toLowerCase() === 'bearer' && token) return token;
        if (typeof req.query.access_token === 'string') return req.query.access_token;
        return undefined;
      },
    }),
  );
  for (const [path, route] of Object.entries(routes))
    app[route.method](`/v3/partner/:partnerId/${path}`, (req: JwtRequest, res: Response) => {
      const granted = String(req.auth?.scope ?? '').split(' ');
      if (!granted.includes(route.scope))
        return res
          .status(403)
          .set('www-authenticate', `Bearer error="insufficient_scope", scope="${route.scope}"`)
          .json({ error: 'insufficient_scope' });
      if (req.auth?.partnerId !== req.params.partnerId) return res.status(404).json({ error: 'not_found' });
      if (route.method === 'get') return res.json([]);
      res.status(201).json({ id: randomUUID() });
    });
  // express-jwt's README error handler.
  app.use((err: Error, _req: Request, res: Response, next: NextFunction) => {
    if (err.name === 'UnauthorizedError') return res.status(401).send('invalid token...');
    next(err);
  });
  return app;
}

beforeAll(async () => {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: 'interop-key', alg: 'RS256', use: 'sig' };
  // Ports first: the provider needs its issuer, the API its audience.
  const placeholder = express();
  const authApp = express();
  issuer = await listen(authApp as never);
  apiUrl = await listen(placeholder as never);
  const provider = new Provider(issuer, {
    clients: partners.map((partner) => ({
      client_id: partner.clientId,
      client_secret: partner.clientSecret,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_post',
      scope: partner.scope.join(' '),
    })),
    scopes: allScopes,
    jwks: { keys: [jwk] },
    cookies: { keys: ['interop-cookie-key-0123456789'] },
    routes: { token: '/oauth/token', jwks: '/.well-known/jwks.json' },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => apiUrl,
        getResourceServerInfo: (_ctx, resource) => {
          if (resource !== apiUrl) throw new errors.InvalidTarget();
          return {
            scope: allScopes.join(' '),
            audience: apiUrl,
            accessTokenFormat: 'jwt',
            accessTokenTTL: 600,
          };
        },
      },
    },
    extraTokenClaims: (_ctx, token) => {
      const clientId = (token as { clientId?: string }).clientId;
      return { partnerId: partners.find((partner) => partner.clientId === clientId)?.partnerId };
    },
  });
  authApp.use(provider.callback());
  placeholder.use(
    api(jwksRsa.expressJwtSecret({ jwksUri: `${issuer}/.well-known/jwks.json`, cache: true }), true),
  );
  // The faulty API: keys from the token's own iss, discovered; no issuer allow-list.
  const keyFromTokenIssuer: GetVerificationKey = async (_req, token) => {
    const iss = String((token?.payload as { iss?: string } | undefined)?.iss ?? '').replace(/\/+$/, '');
    const meta = (await (await fetch(`${iss}/.well-known/openid-configuration`)).json()) as {
      jwks_uri: string;
    };
    const key = await jwksRsa({ jwksUri: meta.jwks_uri }).getSigningKey(token?.header.kid);
    return key.getPublicKey();
  };
  faultyApiUrl = await listen(api(keyFromTokenIssuer, false) as never);
});
afterAll(() => Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve)))));

const verdicts = (report: Report) =>
  Object.fromEntries(report.checks.filter((c) => c.status !== 'passed').map((c) => [c.id, c.status]));
const byId = (report: Report, id: string) => report.checks.find((check) => check.id === id) as CheckResult;

function run(baseUrl: string, client = partners[0]!, extra: Parameters<typeof runConformance>[0] = {}) {
  return runConformance({
    authUrl: issuer,
    baseUrl,
    clientId: client.clientId,
    clientSecret: client.clientSecret,
    otherClientId: partners[1]!.clientId,
    otherClientSecret: partners[1]!.clientSecret,
    expectScopes: client.scope,
    ...extra,
  });
}

describe('interop: oidc-provider + Express with express-jwt and jwks-rsa', () => {
  it('the verdicts against the README wiring, each non-pass for a documented reason; nothing created', async () => {
    creates.length = 0;
    const report = await run(apiUrl);
    expect(verdicts(report)).toEqual({
      // oidc-provider's token response carries no iss, partnerId nor jti fields, which the API
      // documentation §2.2 lists (the claims are in the token; the response fields are not).
      'token-success-response': 'failed',
      'token-partner-id': 'failed',
      'token-issuer': 'failed',
      'token-jti-unique': 'failed',
      // express-jwt's README error handler answers 401 without WWW-Authenticate (RFC 6750 §3: MUST;
      // §3.1: SHOULD carry error="invalid_token").
      'bearer-missing-header': 'failed',
      'bearer-invalid-token-error': 'failed',
      // The README's getToken reads ?access_token= (RFC 6750 §2.3 MAY, SHOULD NOT be used): should.
      'bearer-query-token': 'failed',
      // Without --allow-writes: the body-token check needs a create endpoint; the expiry check 10 min.
      'bearer-body-token': 'skipped',
      'integrity-expired': 'skipped',
      // The endpoint ignores audience: no token for another audience, so the API side is not verified.
      'audience-foreign': 'skipped',
    });
    expect(exitCodeFor(report.checks)).toBe(1);
    expect(byId(report, 'bearer-query-token').severity).toBe('should');
    // The README's getToken splits on a space: "Bearer <token> extra" is accepted, a note, no failure.
    expect(byId(report, 'bearer-malformed-header').details).toContain(
      'lenient parsing of a header that carries the valid token',
    );
    // An HTML 401 body is no failure: the API documentation leaves error bodies open (§7).
    expect(byId(report, 'spec-documented-responses').status).toBe('passed');
    // The foreign audience is ignored (the token names the API) and the foreign issuer refused.
    expect(byId(report, 'audience-foreign-endpoint').details).toMatch(
      /^the token endpoint ignored the unknown audience/,
    );
    expect(byId(report, 'audience-foreign').details).toMatch(/^not verified: not verified at the API/);
    expect(byId(report, 'integrity-foreign-issuer').details).toMatch(/refused with 401/);
    expect(byId(report, 'partner-isolation').details).toMatch(
      /^partner partner-b \(from the second client's token; its own GET loans: 200\)/,
    );
    expect(creates).toEqual([]);
  });

  it('a client authorised for two scopes: oidc-provider answers invalid_scope; the preflight learns A one scope at a time', async () => {
    const report = await run(apiUrl, partners[2]!);
    expect(byId(report, 'scope-authorised-set')).toMatchObject({
      status: 'failed',
      details: expect.stringMatching(/^asking for every scope .* was refused: 400, error invalid_scope;/),
    });
    // The other checks ran with real tokens of A = read:loans create:loan_draft.
    expect(byId(report, 'bearer-valid-token').status).toBe('passed');
    expect(byId(report, 'integrity-alg-none').status).toBe('passed');
    expect(byId(report, 'scope-granted')).toMatchObject({ status: 'passed' });
  });

  it("integrity-foreign-issuer fails an express-jwt + jwks-rsa API that takes its keys from the token's own iss", async () => {
    const report = await run(faultyApiUrl, partners[0]!, {
      only: ['integrity-foreign-issuer', 'integrity-jku'],
    });
    expect(byId(report, 'integrity-foreign-issuer')).toMatchObject({
      status: 'failed',
      details: expect.stringMatching(
        /^foreign issuer: ACCEPTED — .* got 200; the target fetched the suite's \/foreign-issuer\/\.well-known\/openid-configuration, \/foreign-issuer\/\.well-known\/jwks\.json/,
      ),
    });
    // The same API does not follow jku (it looks the key up at the real issuer, finds no such kid and
    // answers 500): refused, with the evidence that the suite's jku was never fetched.
    expect(byId(report, 'integrity-jku')).toMatchObject({
      status: 'passed',
      details: expect.stringMatching(
        /^jku header: refused with a server error \(500\); the target did not fetch anything from the suite's issuer/,
      ),
    });
  });
});
