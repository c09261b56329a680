import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shortenToken } from '../src/redact.js';
import type { TokenEvent } from '../src/token-event.js';
import type { StoredToken, TokenStore } from '../src/token-store.js';
import { providerFor } from './support/provider.js';
import {
  ALL_SCOPES,
  CLIENT_ID,
  PARTNER_ID,
  startTokenServer,
  type TokenServer,
} from './support/token-server.js';

// A shared store holds whatever anyone who can write to it put there. These tests plant entries the
// provider must never serve (and one it must), through a store that answers every key with the plant.

let server: TokenServer;
beforeAll(async () => {
  server = await startTokenServer();
});
afterAll(() => server.close());

const b64url = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** An unsigned-looking JWT with the given claims (a planter need not have the signing key). */
function jwt(claims: Record<string, unknown>): string {
  return `${b64url({ alg: 'ES256', typ: 'at+jwt' })}.${b64url(claims)}.${'s'.repeat(43)}`;
}

/** A plausible entry for this provider, with `claims` and `entry` fields overridden. */
function planted(claims: Record<string, unknown> = {}, entry: Partial<StoredToken> = {}): StoredToken {
  const now = Date.now();
  const exp = Math.floor(now / 1000) + 3600;
  return {
    accessToken: jwt({
      iss: server.issuer,
      aud: [server.audience],
      scope: ALL_SCOPES.join(' '),
      partnerId: PARTNER_ID,
      jti: 'planted',
      exp,
      ...claims,
    }),
    tokenType: 'Bearer',
    expiresAt: exp * 1000,
    obtainedAt: now,
    grantedScopes: ALL_SCOPES,
    partnerId: PARTNER_ID,
    issuer: server.issuer,
    jti: 'planted',
    ...entry,
  };
}

/** A store that answers every `get` (and `singleFlight`, when asked) with `plant`, recording deletes. */
function plantingStore(plant: unknown, withSingleFlight = false) {
  const deleted: string[] = [];
  const written: StoredToken[] = [];
  let current: unknown = plant;
  const store: TokenStore = {
    get: async () => current as StoredToken,
    set: async (_key, value) => {
      written.push(value);
    },
    delete: async (key) => {
      deleted.push(key);
      current = undefined;
    },
    ...(withSingleFlight ? { singleFlight: async () => plant as StoredToken } : {}),
  };
  return { store, deleted, written };
}

async function served(plant: unknown, options: { withSingleFlight?: boolean; verify?: boolean } = {}) {
  const { store, deleted, written } = plantingStore(plant, options.withSingleFlight);
  const events: TokenEvent[] = [];
  const provider = providerFor(server, {
    store,
    onEvent: (e) => events.push(e),
    ...(options.verify ? { verify: { jwks: server.jwks, issuer: server.issuer } } : {}),
  });
  const before = server.tokenRequests();
  const token = await provider.getToken();
  const rejected = events.flatMap((e) => (e.type === 'store-entry-rejected' ? [e.reason] : []));
  return { token, requests: server.tokenRequests() - before, rejected, deleted, written, events };
}

describe('entries a store returns are checked before they are served', () => {
  it('control: a well-formed, live entry for this audience, client and partner is served without a request', async () => {
    const plant = planted();
    const r = await served(plant);
    expect(r.token.accessToken).toBe(plant.accessToken);
    expect(r.requests).toBe(0);
    expect(r.rejected).toEqual([]);
  });

  const cases: [string, () => StoredToken | unknown, string, boolean][] = [
    ['another audience (JWT aud)', () => planted({ aud: ['https://other-api.example'] }), 'audience', true],
    ['another client (client_id claim)', () => planted({ client_id: 'someone-else' }), 'client', true],
    ['another client (azp claim)', () => planted({ azp: 'someone-else' }), 'client', true],
    ['another partner (JWT partnerId ≠ entry)', () => planted({ partnerId: 'partner-999' }), 'partner', true],
    ['another issuer (JWT iss ≠ entry)', () => planted({ iss: 'https://evil.example/' }), 'issuer', true],
    ['scopes the JWT does not grant', () => planted({ scope: 'read:loans' }), 'scope', true],
    [
      'an expired entry',
      () => planted({}, { expiresAt: Date.now() - 1, obtainedAt: Date.now() - 60_000 }),
      'expired',
      false,
    ],
    [
      'an entry whose expiresAt is later than the JWT exp',
      () => planted({ exp: Math.floor(Date.now() / 1000) + 10 }),
      'expired',
      false,
    ],
    ['an access token that is no JWT', () => planted({}, { accessToken: 'not-a-jwt' }), 'malformed', true],
    ['something that is no token entry', () => ({ accessToken: 42 }), 'malformed', true],
  ];
  for (const [what, make, reason, deletes] of cases) {
    it(`${what} → not served, '${reason}' reported${deletes ? ', deleted' : ''}, one own request`, async () => {
      const plant = make();
      const r = await served(plant);
      expect(r.token.accessToken).not.toBe((plant as StoredToken).accessToken);
      expect(server.issued).toContain(r.token.accessToken);
      expect(r.rejected[0]).toBe(reason);
      expect(r.requests).toBe(1);
      expect(r.deleted.length > 0).toBe(deletes);
      // The event names the token by its last characters only.
      const event = r.events.find((e) => e.type === 'store-entry-rejected') as { token?: string };
      if (typeof (plant as StoredToken).accessToken === 'string') {
        expect(event.token).toBe(shortenToken((plant as StoredToken).accessToken));
      }
    });
  }

  it('the same checks apply to what singleFlight resolves with (a planted or stale shared result)', async () => {
    const plant = planted({ aud: ['https://other-api.example'] });
    const r = await served(plant, { withSingleFlight: true });
    expect(r.token.accessToken).not.toBe(plant.accessToken);
    // Refused from get (the miss that led to the flight), then from singleFlight's result.
    expect(r.rejected).toEqual(['audience', 'audience']);
    expect(r.requests).toBe(1);
    // The own token is written for the others.
    expect(r.written.map((t) => t.accessToken)).toEqual([r.token.accessToken]);
  });

  it('once this provider has its own token, an entry for another partner is refused even without claims naming one', async () => {
    const { store, deleted } = plantingStore(undefined);
    let plant: StoredToken | undefined;
    const events: TokenEvent[] = [];
    const provider = providerFor(server, {
      store: { ...store, get: async () => plant },
      onEvent: (e) => events.push(e),
    });
    await provider.getToken(); // its own token, from the endpoint: partner-123
    await provider.invalidate();
    // Right audience, no client claim, no partnerId claim: only the entry names another partner.
    plant = planted({ partnerId: undefined }, { partnerId: 'partner-999' });
    const again = await provider.getToken();
    expect(again.accessToken).not.toBe(plant.accessToken);
    expect(again.partnerId).toBe(PARTNER_ID);
    expect(events.some((e) => e.type === 'store-entry-rejected' && e.reason === 'partner')).toBe(true);
    expect(deleted.length).toBeGreaterThan(0);
  });

  it('with verify, an entry whose signature does not verify is refused, a genuine one served', async () => {
    const forged = planted();
    const r = await served(forged, { verify: true });
    expect(r.rejected).toEqual(['signature']);
    expect(r.token.accessToken).not.toBe(forged.accessToken);
    // A genuine token from the same server, stored by another process, is served.
    const genuine = await providerFor(server).getToken();
    const g = await served({ ...genuine, obtainedAt: Date.now() - 1_000 }, { verify: true });
    expect(g.token.accessToken).toBe(genuine.accessToken);
    expect(g.requests).toBe(0);
  });

  it('the client id never appears in an event', async () => {
    const r = await served(planted({ client_id: 'someone-else' }));
    expect(JSON.stringify(r.events)).not.toContain(CLIENT_ID);
  });
});
