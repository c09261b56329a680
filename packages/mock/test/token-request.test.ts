import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningMock, startMock } from '../src/index.js';
import { credentials, form, sharedSigningKey, tokenRequest } from './helpers.js';

let mock: RunningMock;
beforeAll(async () => {
  mock = await startMock({ signingKey: await sharedSigningKey() });
});
afterAll(() => mock.close());

const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

describe('token-request: client authentication (RFC 6749 §2.3)', () => {
  it('accepts client_id and client_secret as body fields', async () => {
    const answer = await tokenRequest(mock, credentials(mock, mock.clients[0]!));
    expect(answer.status).toBe(200);
  });

  it('accepts HTTP Basic with form-encoded id and secret', async () => {
    const client = mock.clients[1]!;
    const answer = await tokenRequest(
      mock,
      { grant_type: 'client_credentials', audience: mock.audience },
      { headers: { authorization: basic(client.clientId, client.clientSecret) } },
    );
    expect(answer.status).toBe(200);
    expect(answer.body.partnerId).toBe(client.partnerId);
  });

  it('reads the Basic scheme in any case and form-decodes id and secret (RFC 6749 §2.3.1)', async () => {
    const special = await startMock({
      signingKey: await sharedSigningKey(),
      clients: [
        {
          partnerId: 'p-special',
          clientId: 'client one:x',
          clientSecret: 'se cret+/%é',
          authorizedScopes: ['read:loans'],
        },
      ],
    });
    try {
      // application/x-www-form-urlencoded: spaces become '+', '+' becomes %2B, ':' becomes %3A.
      const encoded = (value: string) => new URLSearchParams({ v: value }).toString().slice(2);
      const pair = Buffer.from(`${encoded('client one:x')}:${encoded('se cret+/%é')}`).toString('base64');
      for (const scheme of ['Basic', 'basic', 'BASIC']) {
        const answer = await tokenRequest(
          special,
          { grant_type: 'client_credentials', audience: special.audience },
          { headers: { authorization: `${scheme} ${pair}` } },
        );
        expect([scheme, answer.status]).toEqual([scheme, 200]);
        expect(answer.body.partnerId).toBe('p-special');
      }
    } finally {
      await special.close();
    }
  });

  it('answers 401 invalid_client with a Basic challenge for a wrong Basic secret', async () => {
    const client = mock.clients[0]!;
    const answer = await tokenRequest(
      mock,
      { grant_type: 'client_credentials' },
      { headers: { authorization: basic(client.clientId, 'wrong') } },
    );
    expect(answer.status).toBe(401);
    expect(answer.body).toEqual({
      error: 'invalid_client',
      error_description: 'client authentication failed: unknown client or wrong secret',
    });
    expect(answer.headers.get('www-authenticate')).toMatch(/^Basic realm="partner-auth"/);
    expect(answer.headers.get('cache-control')).toBe('no-store');
  });

  it('answers 401 invalid_client for a wrong body secret and for an unknown client, alike', async () => {
    const wrong = await tokenRequest(mock, credentials(mock, mock.clients[0]!, { client_secret: 'nope' }));
    const unknown = await tokenRequest(mock, credentials(mock, mock.clients[0]!, { client_id: 'nobody' }));
    expect([wrong.status, unknown.status]).toEqual([401, 401]);
    expect(wrong.body).toEqual(unknown.body);
    expect(wrong.body.error).toBe('invalid_client');
  });

  it('answers 401 invalid_client without any credentials, and when the secret is missing', async () => {
    const none = await tokenRequest(mock, { grant_type: 'client_credentials' });
    expect(none.status).toBe(401);
    expect(none.body.error_description).toBe(
      'no client authentication was included: send client_id and client_secret as body fields or HTTP Basic',
    );
    const noSecret = await tokenRequest(
      mock,
      credentials(mock, mock.clients[0]!, { client_secret: undefined }),
    );
    expect(noSecret.status).toBe(401);
  });

  it('refuses two authentication methods at once (400 invalid_request)', async () => {
    const client = mock.clients[0]!;
    const answer = await tokenRequest(mock, credentials(mock, client), {
      headers: { authorization: basic(client.clientId, client.clientSecret) },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe('invalid_request');
    const other = mock.clients[1]!;
    const mixed = await tokenRequest(
      mock,
      { grant_type: 'client_credentials', client_id: other.clientId },
      { headers: { authorization: basic(client.clientId, client.clientSecret) } },
    );
    expect([mixed.status, mixed.body.error_description]).toEqual([
      400,
      'client_id in the body differs from the one in the Basic credentials',
    ]);
  });

  it('answers 401 for Basic credentials that are not base64 or hold no colon', async () => {
    for (const authorization of [
      'Basic !!!',
      'Basic',
      `Basic ${Buffer.from('nocolon').toString('base64')}`,
    ]) {
      const answer = await tokenRequest(
        mock,
        { grant_type: 'client_credentials' },
        { headers: { authorization } },
      );
      expect(answer.status, authorization).toBe(401);
      expect(answer.body.error).toBe('invalid_client');
    }
  });
});

describe('token-request: malformed requests (RFC 6749 §5.2 invalid_request)', () => {
  it('refuses a body that is not form-encoded', async () => {
    const answer = await tokenRequest(
      mock,
      {},
      {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(credentials(mock, mock.clients[0]!)),
      },
    );
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({
      error: 'invalid_request',
      error_description: 'the body must be application/x-www-form-urlencoded (RFC 6749 §4.4.2)',
    });
    expect(answer.headers.get('content-type')).toBe('application/json');
  });

  it('refuses a repeated parameter (RFC 6749 §3.2)', async () => {
    const body = `${new URLSearchParams(credentials(mock, mock.clients[0]!))}&scope=read:loans&scope=read:loans`;
    const answer = await tokenRequest(mock, {}, { body });
    expect(answer.status).toBe(400);
    expect(answer.body.error_description).toBe('the parameter scope is repeated (RFC 6749 §3.2)');
  });

  it('refuses a missing grant_type with invalid_request and another one with unsupported_grant_type', async () => {
    const missing = await tokenRequest(mock, credentials(mock, mock.clients[0]!, { grant_type: undefined }));
    expect([missing.status, missing.body.error]).toEqual([400, 'invalid_request']);
    const empty = await tokenRequest(mock, credentials(mock, mock.clients[0]!, { grant_type: '' }));
    expect([empty.status, empty.body.error]).toEqual([400, 'invalid_request']);
    const other = await tokenRequest(mock, credentials(mock, mock.clients[0]!, { grant_type: 'password' }));
    expect([other.status, other.body.error]).toEqual([400, 'unsupported_grant_type']);
  });

  it('refuses a body that is not valid UTF-8 with invalid_request', async () => {
    const response = await fetch(mock.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': form },
      body: Buffer.concat([
        Buffer.from(`${new URLSearchParams(credentials(mock, mock.clients[0]!))}&x=`),
        Buffer.from([0xff, 0xfe]),
      ]),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: 'invalid_request',
      error_description: 'the body is not valid UTF-8',
    });
  });

  it('refuses a body over 1 MiB with 400', async () => {
    const answer = await tokenRequest(mock, {}, { body: `grant_type=${'x'.repeat(1024 * 1024 + 1)}` });
    expect(answer.status).toBe(400);
    expect(answer.body.error_description).toBe('the body is larger than 1 MiB');
  });

  it('answers every error with Cache-Control: no-store and Pragma: no-cache', async () => {
    const answer = await tokenRequest(mock, { grant_type: 'client_credentials' });
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(answer.headers.get('pragma')).toBe('no-cache');
  });

  it('uses a form content type with a charset parameter', async () => {
    const answer = await tokenRequest(mock, credentials(mock, mock.clients[0]!), {
      headers: { 'content-type': `${form}; charset=UTF-8` },
    });
    expect(answer.status).toBe(200);
  });
});
