import { readFileSync } from 'node:fs';
import { exportSPKI, importJWK, type JWTHeaderParameters, SignJWT } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type FaultName,
  faultCatalogue,
  faultNames,
  isFaultName,
  type MockClient,
  type Profile,
  type RunningMock,
  startMock,
} from '../src/index.js';
import {
  credentials,
  decodeJwt,
  forge,
  getLoans,
  manualClock,
  pathUrl,
  sharedSigningKey,
  signWithForeignKey,
  tokenFor,
  tokenRequest,
} from './helpers.js';

const clients: MockClient[] = [
  {
    partnerId: 'p-all',
    clientId: 'c-all',
    clientSecret: 's-all',
    authorizedScopes: ['read:loans', 'create:loan_draft', 'create:journal_update', 'create:repayment'],
  },
  { partnerId: 'p-read', clientId: 'c-read', clientSecret: 's-read', authorizedScopes: ['read:loans'] },
];
const [all, read] = clients as [MockClient, MockClient];

interface Context {
  mock: RunningMock;
  clock: ReturnType<typeof manualClock>;
}

interface Case {
  /** Faults also active in the control, to make this one observable. */
  base?: FaultName[];
  profile?: Profile;
  /** True when the rule holds. */
  holds(context: Context): Promise<boolean>;
}

const token = (context: Context, client = all, scope?: string) => tokenFor(context.mock, client, scope);
const ask = (context: Context, extra: Record<string, string | undefined> = {}, client = all) =>
  tokenRequest(context.mock, credentials(context.mock, client, extra));
const loansStatus = async (context: Context, authorization?: string, partnerId?: string, query?: string) =>
  (await getLoans(context.mock, authorization, partnerId, query)).status;
const postStatus = async (context: Context, tail: string, init: RequestInit) =>
  (await fetch(pathUrl(context.mock, tail), { method: 'POST', ...init })).status;

/** One case per fault: how to observe the rule that fault breaks. */
const cases: Record<FaultName, Case> = {
  'token-accept-wrong-secret': {
    holds: async (c) => (await ask(c, { client_secret: 'wrong' })).status === 401,
  },
  'token-accept-missing-credentials': {
    holds: async (c) => (await tokenRequest(c.mock, { grant_type: 'client_credentials' })).status === 401,
  },
  'token-accept-any-grant-type': {
    holds: async (c) => (await ask(c, { grant_type: 'password' })).body.error === 'unsupported_grant_type',
  },
  'token-omit-no-store': {
    holds: async (c) => (await ask(c)).headers.get('cache-control') === 'no-store',
  },
  'token-ignore-requested-scope': {
    holds: async (c) => (await ask(c, { scope: 'read:loans' })).body.scope === 'read:loans',
  },
  'token-grant-unauthorized-scopes': {
    holds: async (c) =>
      (await ask(c, { scope: 'read:loans create:repayment' }, read)).body.scope === 'read:loans',
  },
  'token-scope-order-sensitive': {
    holds: async (c) =>
      (await ask(c, { scope: 'read:loans create:loan_draft' })).body.scope === 'read:loans create:loan_draft',
  },
  'token-scope-claim-mismatch': {
    holds: async (c) => {
      const answer = await ask(c, { scope: 'read:loans' });
      return decodeJwt(answer.body.access_token).payload.scope.join(' ') === answer.body.scope;
    },
  },
  'token-expires-in-mismatch': {
    holds: async (c) => {
      const answer = await ask(c);
      const { payload } = decodeJwt(answer.body.access_token);
      return answer.body.expires_in === payload.exp - payload.iat - 1;
    },
  },
  'token-reuse-jti': {
    holds: async (c) => {
      const first = await ask(c);
      const second = await ask(c);
      return first.body.jti !== second.body.jti;
    },
  },
  'token-partner-id-mismatch': {
    holds: async (c) => {
      const answer = await ask(c);
      return answer.body.partnerId === decodeJwt(answer.body.access_token).payload.partnerId;
    },
  },
  'token-iss-mismatch': {
    holds: async (c) => {
      const answer = await ask(c);
      return answer.body.iss === decodeJwt(answer.body.access_token).payload.iss;
    },
  },
  'token-type-not-bearer': { holds: async (c) => (await ask(c)).body.token_type.toLowerCase() === 'bearer' },
  'token-wrong-audience-claim': {
    holds: async (c) => decodeJwt((await ask(c)).body.access_token).payload.aud.includes(c.mock.audience),
  },
  'token-accept-foreign-audience': {
    holds: async (c) => (await ask(c, { audience: 'https://evil.invalid' })).status === 403,
  },
  'api-skip-audience-check': {
    base: ['token-accept-foreign-audience'],
    holds: async (c) => {
      const foreign = (await ask(c, { audience: 'https://evil.invalid' })).body.access_token;
      return (await loansStatus(c, `Bearer ${foreign}`)) === 401;
    },
  },
  'api-accept-alg-none': {
    holds: async (c) => {
      const { header, payload } = decodeJwt(await token(c));
      const none = await loansStatus(c, `Bearer ${forge({ ...header, alg: 'none' }, payload)}`);
      const upper = await loansStatus(c, `Bearer ${forge({ ...header, alg: 'NONE' }, payload)}`);
      return none === 401 && upper === 401;
    },
  },
  'api-accept-hs256-public-key': {
    holds: async (c) => {
      const { header, payload } = decodeJwt(await token(c));
      const jwks = (await (await fetch(c.mock.jwksUrl)).json()) as { keys: Record<string, unknown>[] };
      const pem = await exportSPKI((await importJWK(jwks.keys[0]!, 'RS256')) as CryptoKey);
      const forged = await new SignJWT(payload)
        .setProtectedHeader({ ...header, alg: 'HS256' })
        .sign(new TextEncoder().encode(pem));
      return (await loansStatus(c, `Bearer ${forged}`)) === 401;
    },
  },
  'api-skip-signature-check': {
    holds: async (c) => {
      const genuine = await token(c);
      const { header, payload } = decodeJwt(genuine);
      const tampered = forge(header, { ...payload, scope: ['read:loans'] }, genuine.split('.')[2]);
      return (await loansStatus(c, `Bearer ${tampered}`)) === 401;
    },
  },
  'api-trust-embedded-jwk': {
    holds: async (c) => {
      const { payload } = decodeJwt(await token(c));
      const { jwk } = await signWithForeignKey({});
      const { token: forged } = await signWithForeignKey(payload, { jwk });
      return (await loansStatus(c, `Bearer ${forged}`)) === 401;
    },
  },
  'api-trust-jku': {
    holds: async (c) => {
      const { payload } = decodeJwt(await token(c));
      const { token: forged } = await signWithForeignKey(payload, {
        jku: 'https://attacker.invalid/jwks.json',
      });
      return (await loansStatus(c, `Bearer ${forged}`)) === 401;
    },
  },
  'api-ignore-expiry': {
    holds: async (c) => {
      const genuine = await token(c);
      c.clock.advance(61);
      const status = await loansStatus(c, `Bearer ${genuine}`);
      c.clock.advance(-61);
      return status === 401;
    },
  },
  'api-ignore-nbf': {
    holds: async (c) => {
      const genuine = await token(c);
      c.clock.advance(-30);
      const status = await loansStatus(c, `Bearer ${genuine}`);
      c.clock.advance(30);
      return status === 401;
    },
  },
  'api-skip-issuer-check': {
    base: ['api-skip-signature-check'],
    holds: async (c) => {
      const { header, payload } = decodeJwt(await token(c));
      return (
        (await loansStatus(
          c,
          `Bearer ${forge(header, { ...payload, iss: 'https://evil.invalid/' }, 'c2ln')}`,
        )) === 401
      );
    },
  },
  'api-ignore-scope': {
    holds: async (c) => {
      const readOnly = await token(c, all, 'read:loans');
      return (
        (await postStatus(c, 'loan_draft', {
          headers: { authorization: `Bearer ${readOnly}`, 'content-type': 'application/json' },
          body: '{}',
        })) === 403
      );
    },
  },
  'api-insufficient-scope-401': {
    holds: async (c) => (await loansStatus(c, `Bearer ${await token(c, all, 'create:repayment')}`)) === 403,
  },
  'api-skip-partner-isolation': {
    holds: async (c) => (await loansStatus(c, `Bearer ${await token(c)}`, read.partnerId)) === 403,
  },
  'api-accept-query-token': {
    holds: async (c) =>
      (await loansStatus(c, undefined, undefined, `?access_token=${await token(c)}`)) === 401,
  },
  'api-accept-body-token': {
    holds: async (c) => {
      const genuine = await token(c);
      const formStatus = await postStatus(c, 'loan_draft', {
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `access_token=${genuine}`,
      });
      const jsonStatus = await postStatus(c, 'loan_draft', {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ access_token: genuine }),
      });
      return formStatus === 401 && jsonStatus === 401;
    },
  },
  'api-bearer-case-sensitive': {
    holds: async (c) => (await loansStatus(c, `bearer ${await token(c)}`)) === 200,
  },
  'api-accept-any-scheme': {
    holds: async (c) => {
      const genuine = await token(c);
      return (
        (await loansStatus(c, `Token ${genuine}`)) === 401 &&
        (await loansStatus(c, `Basic ${genuine}`)) === 401
      );
    },
  },
  'api-omit-challenge': {
    holds: async (c) =>
      (await getLoans(c.mock)).headers.get('www-authenticate') === 'Bearer realm="partner-api"',
  },
  'api-challenge-without-error': {
    holds: async (c) =>
      (await getLoans(c.mock, 'Bearer x.y.z')).headers
        .get('www-authenticate')
        ?.includes('error="invalid_token"') === true,
  },
  'api-crash-on-malformed-header': {
    holds: async (c) => {
      const statuses = await Promise.all(['Bearer', 'Bearer a.b', 'Bearer !!'].map((h) => loansStatus(c, h)));
      return statuses.every((status) => status === 401);
    },
  },
  'api-reject-valid-tokens': {
    holds: async (c) => (await loansStatus(c, `Bearer ${await token(c)}`)) === 200,
  },
  'api-undocumented-response': {
    holds: async (c) =>
      (await getLoans(c.mock, `Bearer ${await token(c)}`)).headers.get('content-type') === 'application/json',
  },
  'api-no-body-limit': {
    holds: async (c) =>
      (await postStatus(c, 'loan_draft', {
        headers: { authorization: `Bearer ${await token(c)}`, 'content-type': 'application/json' },
        body: JSON.stringify({ pad: 'x'.repeat(1024 * 1024) }),
      })) === 413,
  },
  'api-skip-typ-check': {
    base: ['api-skip-signature-check'],
    profile: 'rfc9068',
    holds: async (c) => {
      const { header, payload } = decodeJwt(await token(c));
      return (await loansStatus(c, `Bearer ${forge({ ...header, typ: 'JWT' }, payload, 'c2ln')}`)) === 401;
    },
  },
};

const running: RunningMock[] = [];
afterAll(() => Promise.all(running.map((mock) => mock.close())));

async function launch(faults: FaultName[], profile: Profile = 'deployed'): Promise<Context> {
  const clock = manualClock();
  const mock = await startMock({
    clients,
    faults,
    profile,
    clock: clock.now,
    tokenTtlSeconds: 60,
    signingKey: await sharedSigningKey(),
  });
  running.push(mock);
  return { mock, clock };
}

/** The positive control: a genuine token reads the partner's loans. */
async function positiveControl(context: Context): Promise<boolean> {
  return (await loansStatus(context, `Bearer ${await token(context)}`, all.partnerId)) === 200;
}

describe('faults', () => {
  it('has a case for every fault of the catalogue and only those', () => {
    expect(Object.keys(cases).sort()).toEqual([...faultNames].sort());
    expect(faultNames.every((name) => typeof faultCatalogue[name] === 'string')).toBe(true);
    expect(isFaultName('api-ignore-scope')).toBe(true);
    expect(isFaultName('nope')).toBe(false);
  });

  it('documents every fault in the README table', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    for (const name of faultNames)
      expect(readme, name).toContain(`| \`${name}\` | ${faultCatalogue[name]} |`);
  });

  it('refuses an unknown fault name with the list of valid ones', async () => {
    await expect(startMock({ faults: ['nope' as FaultName] })).rejects.toMatchObject({
      code: 'ERR_MOCK_FAULT',
      message: `Unknown fault "nope". Expected one of: ${faultNames.join(', ')}.`,
    });
  });

  describe.concurrent.each(faultNames)('%s', (fault) => {
    const { base = [], profile, holds } = cases[fault];
    it('the rule holds without the fault', async () => {
      const context = await launch(base, profile);
      expect(await holds(context)).toBe(true);
      expect(await positiveControl(context)).toBe(true);
    });
    it('the fault breaks the rule while the positive control still passes (except api-reject-valid-tokens)', async () => {
      const context = await launch([...base, fault], profile);
      expect(context.mock.faults).toEqual([...base, fault]);
      expect(await holds(context)).toBe(false);
      expect(await positiveControl(context)).toBe(fault !== 'api-reject-valid-tokens');
    });
  });
});

describe('faults: details the conformance suite relies on', () => {
  it('api-accept-hs256-public-key uses the key named by kid, or any JWKS key when there is no kid', async () => {
    const context = await launch(['api-accept-hs256-public-key']);
    const { header, payload } = decodeJwt(await token(context));
    const jwks = (await (await fetch(context.mock.jwksUrl)).json()) as { keys: Record<string, unknown>[] };
    const pem = await exportSPKI((await importJWK(jwks.keys[0]!, 'RS256')) as CryptoKey);
    const sign = (protectedHeader: Record<string, unknown>) =>
      new SignJWT(payload)
        .setProtectedHeader(protectedHeader as JWTHeaderParameters)
        .sign(new TextEncoder().encode(pem));
    const { kid: _, ...noKid } = header;
    expect(await loansStatus(context, `Bearer ${await sign({ ...header, alg: 'HS256' })}`)).toBe(200);
    expect(await loansStatus(context, `Bearer ${await sign({ ...noKid, alg: 'HS256' })}`)).toBe(200);
    expect(
      await loansStatus(context, `Bearer ${await sign({ ...header, alg: 'HS256', kid: 'other' })}`),
    ).toBe(401);
  });
});
