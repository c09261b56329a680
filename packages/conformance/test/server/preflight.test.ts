import { afterAll, describe, expect, it } from 'vitest';
import { ConformanceError } from '../../src/errors.js';
import { runConformance } from '../../src/server/run.js';
import { closedPortUrl, json, startServer, type TestServer } from '../helpers.js';

const servers: TestServer[] = [];
afterAll(() => Promise.all(servers.map((s) => s.close())));

const credentials = { clientId: 'the-id', clientSecret: 'the-secret-value' };

async function preflightError(authUrl: string, baseUrl: string): Promise<ConformanceError> {
  const error = await runConformance({ authUrl, baseUrl, ...credentials }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ConformanceError);
  expect((error as Error).message).not.toContain('the-secret-value');
  expect((error as Error).message).not.toContain('\n');
  return error as ConformanceError;
}

describe('preflight', () => {
  it('an unreachable token endpoint is ERR_UNREACHABLE (exit 3) with a one-line diagnosis', async () => {
    const url = await closedPortUrl();
    const error = await preflightError(url, url);
    expect(error.code).toBe('ERR_UNREACHABLE');
    expect(error.message).toBe(
      `Cannot reach the token endpoint at ${url}/oauth/token: connect ECONNREFUSED ${url.slice(7)} (ECONNREFUSED). Check --auth-url and that the service is running.`,
    );
  });

  it('refused credentials are ERR_CREDENTIALS, with what to do', async () => {
    const auth = await startServer((_req, res) => json(res, 401, { error: 'invalid_client' }));
    servers.push(auth);
    const error = await preflightError(auth.url, auth.url);
    expect(error.code).toBe('ERR_CREDENTIALS');
    expect(error.message).toBe(
      `The token endpoint ${auth.url}/oauth/token refused the client credentials (401 invalid_client). Check PARTNER_CLIENT_ID and PARTNER_CLIENT_SECRET: they come from the partner administration console of this environment.`,
    );
  });

  it('a server that is not a token endpoint is ERR_PREFLIGHT', async () => {
    const auth = await startServer((_req, res) => json(res, 404, { message: 'nothing here' }));
    servers.push(auth);
    const error = await preflightError(auth.url, auth.url);
    expect(error.code).toBe('ERR_PREFLIGHT');
    expect(error.message).toMatch(
      /answered 404 without an access_token; .* Is --auth-url the address of the authentication service\?$/,
    );
  });

  it('an unreachable API after a good token is ERR_UNREACHABLE naming --base-url', async () => {
    const auth = await startServer((_req, res) =>
      json(
        res,
        200,
        {
          access_token: 'opaque-token-value-123',
          token_type: 'bearer',
          expires_in: 60,
          scope: 'read:loans',
          partnerId: 'p1',
        },
        { 'cache-control': 'no-store' },
      ),
    );
    servers.push(auth);
    const api = await closedPortUrl();
    const error = await preflightError(auth.url, api);
    expect(error.code).toBe('ERR_UNREACHABLE');
    expect(error.message).toMatch(new RegExp(`^Cannot reach the partner API at ${api}: .*Check --base-url`));
  });
});

describe('preflight against strict or unusual token endpoints', () => {
  it('an opaque token for `audience` and a JWT for RFC 8707 `resource`: the run sends `resource` and says so', async () => {
    const { SignJWT, generateKeyPair } = await import('jose');
    const { privateKey } = await generateKeyPair('RS256');
    const forms: URLSearchParams[] = [];
    const auth = await startServer((_req, res, body) => {
      const form = new URLSearchParams(body);
      forms.push(form);
      const respond = (token: string) =>
        json(
          res,
          200,
          { access_token: token, token_type: 'bearer', expires_in: 60, scope: 'read:loans', partnerId: 'p1' },
          { 'cache-control': 'no-store' },
        );
      if (!form.has('resource')) return respond('opaque-token-value-123');
      void new SignJWT({ scope: 'read:loans', partnerId: 'p1' })
        .setProtectedHeader({ alg: 'RS256' })
        .setAudience(form.get('resource')!)
        .setExpirationTime('1m')
        .sign(privateKey)
        .then(respond);
    });
    const api = await startServer((_req, res) => json(res, 200, []));
    servers.push(auth, api);
    const notes: string[][] = [];
    await runConformance({
      authUrl: auth.url,
      baseUrl: api.url,
      ...credentials,
      only: ['audience-claim'],
      onTarget: (info) => notes.push(info.notes ?? []),
    });
    expect(notes).toEqual([
      [
        'the token endpoint ignored `audience` and issued an opaque token; with the RFC 8707 `resource` parameter it issued a JWT, so every token request of this run also sends `resource`',
      ],
    ]);
    expect(forms.at(-1)?.get('resource')).toBe(api.url);
  });

  it('a token endpoint that refuses every scope ask says so, and what to do', async () => {
    const auth = await startServer((_req, res) => json(res, 400, { error: 'invalid_scope' }));
    servers.push(auth);
    const error = await preflightError(auth.url, auth.url);
    expect(error.code).toBe('ERR_PREFLIGHT');
    expect(error.message).toMatch(
      /answered 400 invalid_scope without an access_token; .* Asking for every scope, then for each scope alone, was refused: give --expect-scopes with the scopes the partner console shows, and check --audience\.$/,
    );
  });
});
