import { afterEach, describe, expect, it } from 'vitest';
import { type MockClient, type RunningMock, startMock } from '../src/index.js';
import { maxAgeOf } from '../src/register-document.js';
import { credentials, loansUrl, tokenRequest } from './helpers.js';
import { type RegisterServer, startRegisterServer } from './support/register-server.js';

// The production profile against a real register server on 127.0.0.1 that signs with a test key.
// The mock and the register server share one clock the test moves, so max-age and exp are exercised
// without sleeping.

const all = ['read:loans', 'create:loan_draft', 'create:journal_update', 'create:repayment'];
const client = (partnerId: string, authorizedScopes = all): MockClient => ({
  partnerId,
  clientId: `client-${partnerId}`,
  clientSecret: `secret-${partnerId}-0123456789`,
  authorizedScopes,
});
const approved = client('ptn_approved');
const revoked = client('ptn_revoked');
const expired = client('ptn_expired');
const lapsed = client('ptn_lapsed');
const suspended = client('ptn_suspended');
const stranger = client('ptn_never');

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp(
  configure: (register: RegisterServer) => void = () => undefined,
  lookup: 'register' | 'partner' = 'register',
) {
  const clock = { now: Date.now() };
  const register = await startRegisterServer();
  cleanups.push(() => register.close());
  register.state.now = () => clock.now;
  const inAYear = new Date(clock.now + 365 * 86_400_000).toISOString();
  register.state.partners = [
    {
      partnerId: approved.partnerId,
      name: 'Approved Lending',
      status: 'active',
      scopes: ['read:loans', 'create:loan_draft'],
      validUntil: inAYear,
      decisionId: 'dec_approved',
    },
    {
      partnerId: revoked.partnerId,
      name: 'Revoked Lending',
      status: 'revoked',
      scopes: [],
      validUntil: null,
      decisionId: 'dec_revoked',
    },
    {
      partnerId: expired.partnerId,
      name: 'Expired Lending',
      status: 'expired',
      scopes: [],
      validUntil: '2026-01-01T00:00:00.000Z',
      decisionId: 'dec_expired',
    },
    {
      // Still active in the register, but its validUntil is only a minute away.
      partnerId: lapsed.partnerId,
      name: 'Lapsing Lending',
      status: 'active',
      scopes: ['read:loans'],
      validUntil: new Date(clock.now + 60_000).toISOString(),
      decisionId: 'dec_lapsing',
    },
  ];
  // Suspended after a regression (the certification service's decision), and one suspended by a register
  // that does not say since when.
  register.state.partners.push({
    partnerId: suspended.partnerId,
    name: 'Suspended Lending',
    status: 'suspended',
    scopes: [],
    validUntil: inAYear,
    decisionId: 'dec_suspended',
    suspendedAt: '2026-03-01T12:00:00.000Z',
  });
  configure(register);
  const mock = await startMock({
    profile: 'production',
    clients: [approved, revoked, expired, lapsed, stranger, suspended],
    register: { url: register.registerUrl, key: register.key, ...(lookup === 'partner' && { lookup }) },
    clock: () => clock.now,
  });
  cleanups.push(() => mock.close());
  return { mock, register, clock };
}

const ask = (mock: RunningMock, who: MockClient, scope?: string) =>
  tokenRequest(mock, credentials(mock, who, { scope }));

describe('production profile: who gets a token', () => {
  it('gives an active partner exactly its approved scopes: requested ∩ authorised ∩ approved', async () => {
    const { mock } = await setUp();
    const everything = await ask(mock, approved);
    expect(everything.status).toBe(200);
    expect(everything.body.scope).toBe('read:loans create:loan_draft');
    expect(everything.body.partnerId).toBe(approved.partnerId);
    expect((await ask(mock, approved, 'read:loans create:repayment')).body.scope).toBe('read:loans');
    const notApprovedScope = await ask(mock, approved, 'create:repayment');
    expect(notApprovedScope.status).toBe(400);
    expect(notApprovedScope.body.error).toBe('invalid_scope');
    expect(notApprovedScope.body.error_description).toContain('approved: read:loans create:loan_draft');
    // The token works at the API of the same mock, for the approved scope only.
    const loans = await fetch(loansUrl(mock, approved.partnerId), {
      headers: { authorization: `Bearer ${everything.body.access_token}` },
    });
    expect(loans.status).toBe(200);
    expect(mock.registerStatus()?.state).toBe('fresh');
  });

  it('control: the same clients under the deployed profile get every authorised scope', async () => {
    const plain = await startMock({ clients: [approved] });
    cleanups.push(() => plain.close());
    expect((await ask(plain, approved)).body.scope).toBe(all.join(' '));
    expect(plain.registerStatus()).toBeUndefined();
  });

  it.each([
    ['revoked', revoked, `its approval was revoked (decision dec_revoked)`],
    [
      'suspended',
      suspended,
      'its approval is suspended since 2026-03-01T12:00:00.000Z (decision dec_suspended)',
    ],
    ['expired', expired, 'its approval expired on 2026-01-01T00:00:00.000Z (decision dec_expired)'],
    ['never approved', stranger, 'it was never approved'],
  ])(
    'refuses a partner %s with unauthorized_client saying why and where to certify',
    async (_name, who, reason) => {
      const { mock, register } = await setUp();
      const answer = await ask(mock, who);
      expect(answer.status).toBe(400);
      expect(answer.headers.get('cache-control')).toBe('no-store');
      expect(answer.body).toEqual({
        error: 'unauthorized_client',
        error_description: `partner ${who.partnerId} is not approved for production: ${reason}. Certify your integration at ${register.url} (a certification run, then a reviewer's approval), then ask again`,
      });
    },
  );

  it('refuses a suspended partner also when its entry says no suspendedAt, and in lookup partner', async () => {
    const { mock } = await setUp((register) => {
      const entry = register.state.partners.find((p) => p.partnerId === suspended.partnerId)!;
      delete entry.suspendedAt;
    }, 'partner');
    const answer = await ask(mock, suspended);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe('unauthorized_client');
    expect(answer.body.error_description).toContain('its approval is suspended (decision dec_suspended)');
    // Control: the active partner of the same register gets its token.
    expect((await ask(mock, approved)).status).toBe(200);
  });

  it('lets a token issued before a suspension through until it expires, as after a revocation (documented)', async () => {
    const { mock, register, clock } = await setUp((r) => {
      r.state.maxAge = 1;
    });
    const before = await ask(mock, approved);
    expect(before.status).toBe(200);
    const call = () =>
      fetch(loansUrl(mock, approved.partnerId), {
        headers: { authorization: `Bearer ${before.body.access_token}` },
      });
    for (const status of ['suspended', 'revoked'] as const) {
      register.state.partners = register.state.partners.map((p) =>
        p.partnerId === approved.partnerId ? { ...p, status, scopes: [] } : p,
      );
      clock.now += 2000;
      expect((await ask(mock, approved)).body.error).toBe('unauthorized_client');
      // The API checks the token, not the register: the earlier token still reads until its exp.
      expect((await call()).status).toBe(200);
    }
    clock.now += 43_200_000;
    expect((await call()).status).toBe(401);
  });

  it('refuses a register whose suspendedAt is not a date, naming the field', async () => {
    const { mock } = await setUp((register) => {
      const entry = register.state.partners.find((p) => p.partnerId === suspended.partnerId)!;
      entry.suspendedAt = 'last tuesday';
    });
    const answer = await ask(mock, approved);
    expect(answer.status).toBe(503);
    expect(answer.body.error_description).toContain('suspendedAt of the register is not a date or null');
  });

  it('refuses an approval whose validUntil has passed by its own clock, even while the register still says active', async () => {
    const { mock, clock } = await setUp((register) => {
      register.state.maxAge = 3600;
    });
    expect((await ask(mock, lapsed)).status).toBe(200);
    clock.now += 61_000;
    const answer = await ask(mock, lapsed);
    expect(answer.status).toBe(400);
    expect(answer.body.error_description).toMatch(/its approval expired on .* \(decision dec_lapsing\)/);
  });

  it('checks client authentication first: a wrong secret is invalid_client, not a register answer', async () => {
    const { mock } = await setUp();
    const answer = await tokenRequest(mock, credentials(mock, { ...approved, clientSecret: 'wrong' }));
    expect(answer.status).toBe(401);
    expect(answer.body.error).toBe('invalid_client');
  });
});

describe('production profile: the register is verified', () => {
  it.each([
    ['a tampered signature', (r: RegisterServer) => (r.state.tamper = true), /signature does not verify/],
    ['the wrong typ', (r: RegisterServer) => (r.state.typ = 'JWT'), /typ/],
    ['a key that is not in the JWKS', (r: RegisterServer) => (r.state.foreignKey = true), /signature/],
    ['no kid', (r: RegisterServer) => (r.state.noKid = true), /kid/],
    ['an expired register', (r: RegisterServer) => (r.state.ttlSeconds = -10), /expired/],
  ])('issues nothing on %s (fail closed, 503 saying why)', async (_name, spoil, reason) => {
    const { mock } = await setUp(spoil as (r: RegisterServer) => void);
    const answer = await ask(mock, approved);
    expect(answer.status).toBe(503);
    expect(answer.body.error).toBe('temporarily_unavailable');
    expect(answer.body.error_description).toMatch(reason);
    expect(mock.registerStatus()).toMatchObject({ state: 'none', lastError: expect.stringMatching(reason) });
  });

  it('refuses a wrong register reader key, naming it', async () => {
    const register = await startRegisterServer();
    cleanups.push(() => register.close());
    const mock = await startMock({
      profile: 'production',
      clients: [approved],
      register: { url: register.registerUrl, key: 'not-the-key' },
    });
    cleanups.push(() => mock.close());
    const answer = await ask(mock, approved);
    expect(answer.status).toBe(503);
    expect(answer.body.error_description).toContain('answered 401');
    expect(answer.body.error_description).toContain('register reader key');
  });

  it('refuses a register without seq, saying the service must sign one', async () => {
    const { mock } = await setUp((r) => {
      r.state.omitSeq = true;
    });
    const answer = await ask(mock, approved);
    expect(answer.status).toBe(503);
    expect(answer.body.error_description).toContain('the register has no seq');
    expect(mock.registerStatus()).toMatchObject({
      state: 'none',
      lastError: expect.stringContaining('no seq'),
    });
  });
});

describe('production profile: caching and outages', () => {
  it('honours max-age: no read within it, a conditional read after it, a change taken at once', async () => {
    const { mock, register, clock } = await setUp((r) => {
      r.state.maxAge = 30;
    });
    expect(register.asked.register).toBe(1); // the read at start
    for (let i = 0; i < 3; i++) expect((await ask(mock, approved)).status).toBe(200);
    expect(register.asked.register).toBe(1);
    clock.now += 31_000;
    expect((await ask(mock, approved)).status).toBe(200);
    expect(register.asked.register).toBe(2);
    expect(register.asked.notModified).toBe(1); // unchanged: 304 to If-None-Match
    expect(register.asked.ifNoneMatch).toHaveLength(1);
    expect(mock.registerStatus()).toMatchObject({ state: 'fresh', fetches: 1, notModified: 1 });
    // A revocation: still served from the copy within max-age, refused once it has passed.
    register.state.partners[0]!.status = 'revoked';
    clock.now += 10_000;
    expect((await ask(mock, approved)).status).toBe(200);
    expect(register.asked.register).toBe(2);
    clock.now += 21_000;
    const refused = await ask(mock, approved);
    expect(refused.status).toBe(400);
    expect(refused.body.error_description).toContain('revoked');
    expect(register.asked.register).toBe(3);
  });

  it('control: max-age=0 reads the register on every token request', async () => {
    const { mock, register } = await setUp((r) => {
      r.state.maxAge = 0;
    });
    for (let i = 0; i < 3; i++) await ask(mock, approved);
    expect(register.asked.register).toBe(4);
  });

  it('keeps serving on the last valid copy while the service is unreachable, until its exp, then refuses', async () => {
    const { mock, register, clock } = await setUp((r) => {
      r.state.maxAge = 5;
      r.state.ttlSeconds = 120;
    });
    expect((await ask(mock, approved)).status).toBe(200);
    await register.close();
    clock.now += 10_000;
    const during = await ask(mock, approved);
    expect(during.status).toBe(200);
    expect(during.body.scope).toBe('read:loans create:loan_draft');
    expect((await ask(mock, revoked)).status).toBe(400); // decisions still come from the copy
    expect(mock.registerStatus()).toMatchObject({
      state: 'stale',
      lastError: expect.stringContaining('could not be reached'),
    });
    clock.now += 111_000; // past the copy's exp (120 s after it was signed)
    const after = await ask(mock, approved);
    expect(after.status).toBe(503);
    expect(after.body.error_description).toContain('could not be reached');
    expect(mock.registerStatus()?.state).toBe('none');
  });
});

describe("production profile: lookup 'partner' reads one entry per token request", () => {
  it('reads only the asking partner’s entry, decides as the whole register would, never the whole register', async () => {
    const { mock, register } = await setUp(() => undefined, 'partner');
    expect(mock.registerStatus()).toMatchObject({ lookup: 'partner', state: 'none', partners: 0 });
    const granted = await ask(mock, approved);
    expect(granted.status).toBe(200);
    expect(granted.body.scope).toBe('read:loans create:loan_draft');
    const refusedRevoked = await ask(mock, revoked);
    expect(refusedRevoked.status).toBe(400);
    expect(refusedRevoked.body.error_description).toContain(
      'its approval was revoked (decision dec_revoked)',
    );
    expect((await ask(mock, expired)).body.error_description).toContain('its approval expired');
    const never = await ask(mock, stranger);
    expect(never.status).toBe(400);
    expect(never.body.error).toBe('unauthorized_client');
    expect(never.body.error_description).toContain('it was never approved');
    // Only the entries asked for were read, once each; the whole register never.
    expect(register.asked.register).toBe(0);
    expect(register.asked.partners).toEqual({
      [approved.partnerId]: 1,
      [revoked.partnerId]: 1,
      [expired.partnerId]: 1,
      [stranger.partnerId]: 1,
    });
    expect(mock.registerStatus()).toMatchObject({ lookup: 'partner', state: 'fresh', partners: 4 });
  });

  it('keeps each entry (and an absence) for its max-age, revalidates with its ETag, takes a change after it', async () => {
    const { mock, register, clock } = await setUp((r) => {
      r.state.maxAge = 30;
    }, 'partner');
    for (let i = 0; i < 3; i++) {
      expect((await ask(mock, approved)).status).toBe(200);
      expect((await ask(mock, stranger)).status).toBe(400);
    }
    expect(register.asked.partners).toEqual({ [approved.partnerId]: 1, [stranger.partnerId]: 1 });
    clock.now += 31_000;
    expect((await ask(mock, approved)).status).toBe(200);
    expect(register.asked.partners[approved.partnerId]).toBe(2);
    expect(register.asked.notModified).toBe(1);
    // The stranger is approved: its absence lapses with the 404's max-age and the entry is taken.
    register.state.partners.push({
      partnerId: stranger.partnerId,
      name: 'New Lending',
      status: 'active',
      scopes: ['read:loans'],
      validUntil: new Date(clock.now + 86_400_000).toISOString(),
      decisionId: 'dec_new',
    });
    const now = await ask(mock, stranger);
    expect(now.status).toBe(200);
    expect(now.body.scope).toBe('read:loans');
    // A revocation is taken after the entry's max-age, not before.
    register.state.partners[0]!.status = 'revoked';
    expect((await ask(mock, approved)).status).toBe(200);
    clock.now += 31_000;
    expect((await ask(mock, approved)).body.error_description).toContain('revoked');
  });

  it('fails closed per entry: the last verified entry until its exp while unreachable, then 503; a forged entry is refused', async () => {
    const { mock, register, clock } = await setUp((r) => {
      r.state.maxAge = 5;
      r.state.ttlSeconds = 120;
    }, 'partner');
    expect((await ask(mock, approved)).status).toBe(200);
    register.state.tamper = true;
    clock.now += 6_000;
    // A tampered entry does not replace the verified one (served on it, stale).
    expect((await ask(mock, approved)).status).toBe(200);
    expect(mock.registerStatus()).toMatchObject({
      state: 'stale',
      lastError: expect.stringContaining('signature'),
    });
    // A partner never read before gets nothing from a forged entry.
    const forged = await ask(mock, revoked);
    expect(forged.status).toBe(503);
    expect(forged.body.error).toBe('temporarily_unavailable');
    await register.close();
    clock.now += 120_000;
    const after = await ask(mock, approved);
    expect(after.status).toBe(503);
    expect(after.body.error_description).toContain('could not be reached');
  });
});

describe('production profile: options', () => {
  it('needs a register and explicit clients, and the register only goes with the production profile', async () => {
    await expect(startMock({ profile: 'production', clients: [approved] })).rejects.toThrow(
      /'production' profile needs register/,
    );
    await expect(
      startMock({ profile: 'production', register: { url: 'http://127.0.0.1:1/register', key: 'k' } }),
    ).rejects.toThrow(/and clients/);
    await expect(
      startMock({ clients: [approved], register: { url: 'http://127.0.0.1:1/register', key: 'k' } }),
    ).rejects.toThrow("register is for the 'production' profile only");
    await expect(
      startMock({
        profile: 'production',
        clients: [approved],
        register: { url: 'ftp://127.0.0.1/register', key: 'k' },
      }),
    ).rejects.toThrow(/register.url must be an http\(s\) URL/);
  });

  it('reads Cache-Control max-age, and treats no-cache, no-store and its absence as 0', () => {
    expect(maxAgeOf('max-age=60')).toBe(60);
    expect(maxAgeOf('public, max-age=5, must-revalidate')).toBe(5);
    expect(maxAgeOf('no-cache, max-age=60')).toBe(0);
    expect(maxAgeOf('no-store')).toBe(0);
    expect(maxAgeOf(null)).toBe(0);
    expect(maxAgeOf('max-age=abc')).toBe(0);
  });
});
