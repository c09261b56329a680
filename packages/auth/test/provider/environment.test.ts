import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NotApprovedForProductionError, TokenRequestError } from '../../src/errors.js';
import { createMemoryTokenStore, type StoredToken, type TokenStore } from '../../src/token-store.js';
import { providerFor } from '../support/provider.js';
import { startTokenServer, type TokenServer } from '../support/token-server.js';

// The `environment` option: a shared store never mixes environments, and production names the
// refusal of a partner that is not approved.

let server: TokenServer;
beforeEach(async () => {
  server = await startTokenServer();
});
afterEach(async () => {
  await server.close();
});

/** A memory store that remembers the keys it was given. */
function recordingStore(): { store: TokenStore; keys: string[] } {
  const inner = createMemoryTokenStore();
  const keys: string[] = [];
  return {
    keys,
    store: {
      get: (key) => inner.get(key),
      set: (key, entry: StoredToken, ttlMs) => {
        keys.push(key);
        return inner.set(key, entry, ttlMs);
      },
      delete: (key) => inner.delete(key),
    },
  };
}

const refusal = {
  error: 'unauthorized_client',
  error_description:
    'partner ptn_1 is not approved for production: its approval was revoked (decision dec_9). Certify your integration at https://certify.example',
};

describe('environment', () => {
  it('keeps the environment in the cache key: staging and production never share a token through one store', async () => {
    const { store, keys } = recordingStore();
    const staging = await providerFor(server, { store, environment: 'staging' }).getToken();
    const production = await providerFor(server, { store, environment: 'production' }).getToken();
    expect(server.tokenRequests()).toBe(2);
    expect(production.accessToken).not.toBe(staging.accessToken);
    expect(keys[0]).toMatch(
      /^partner-lending-auth:v1\|env=staging\|http:\/\/127\.0\.0\.1:\d+\/oauth\/token\|/,
    );
    expect(keys[1]).toMatch(/^partner-lending-auth:v1\|env=production\|/);
    // Control: a second production provider on the same store does share the production token.
    const again = await providerFor(server, { store, environment: 'production' }).getToken();
    expect(again.accessToken).toBe(production.accessToken);
    expect(server.tokenRequests()).toBe(2);
  });

  it('leaves the keys of a provider without an environment as they were', async () => {
    const { store, keys } = recordingStore();
    await providerFor(server, { store }).getToken();
    expect(keys[0]).toMatch(
      /^partner-lending-auth:v1\|http:\/\/127\.0\.0\.1:\d+\/oauth\/token\|[0-9a-f]{16}\|/,
    );
  });

  it('says which environment it serves', () => {
    expect(providerFor(server, { environment: 'production' }).environment).toBe('production');
    expect(providerFor(server).environment).toBeUndefined();
  });

  it('refuses an unknown environment', () => {
    expect(() => providerFor(server, { environment: 'prod' as never })).toThrow(
      `createTokenProvider: environment must be 'staging' or 'production', got "prod".`,
    );
  });
});

describe('NotApprovedForProductionError', () => {
  it("is what production's unauthorized_client becomes, carrying the endpoint's words", async () => {
    server.next(() => ({ status: 400, body: refusal }));
    const error = await providerFor(server, { environment: 'production' })
      .getToken()
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(NotApprovedForProductionError);
    expect(error).toBeInstanceOf(TokenRequestError);
    const refused = error as NotApprovedForProductionError;
    expect(refused.code).toBe('ERR_NOT_APPROVED_FOR_PRODUCTION');
    expect(refused.name).toBe('NotApprovedForProductionError');
    expect(refused.status).toBe(400);
    expect(refused.error).toBe('unauthorized_client');
    expect(refused.errorCode).toBe('unauthorized_client');
    expect(refused.errorDescription).toBe(refusal.error_description);
    expect(refused.message).toBe(
      `not approved for production: the production token endpoint refused a token (400 unauthorized_client), saying: ${refusal.error_description}. Production opens after a certification run passes and a reviewer approves it; get (or renew) that approval, then try again.`,
    );
    expect(refused.cause).toBeInstanceOf(TokenRequestError);
    expect(server.tokenRequests()).toBe(1); // a refusal is not retried
  });

  it('control: the same refusal outside production stays a TokenRequestError', async () => {
    for (const environment of ['staging', undefined] as const) {
      server.next(() => ({ status: 400, body: refusal }));
      const error = await providerFor(server, environment ? { environment } : {})
        .getToken()
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(TokenRequestError);
      expect(error).not.toBeInstanceOf(NotApprovedForProductionError);
      expect((error as TokenRequestError).code).toBe('ERR_TOKEN_REQUEST');
    }
  });

  it('control: another refusal in production (wrong secret) stays a TokenRequestError', async () => {
    server.next(() => ({ status: 401, body: { error: 'invalid_client' } }));
    const error = await providerFor(server, { environment: 'production' })
      .getToken()
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TokenRequestError);
    expect(error).not.toBeInstanceOf(NotApprovedForProductionError);
  });
});
