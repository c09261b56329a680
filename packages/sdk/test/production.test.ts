// The partner's switch to production, against the real mock's production profile and a register
// server on 127.0.0.1 that signs its register with a test key.

import { createMemoryTokenStore, createTokenProvider } from '@partner-lending/auth';
import { type MockClient, type RunningMock, startMock } from '@partner-lending/mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RegisterServer, startRegisterServer } from '../../mock/test/support/register-server.js';
import {
  ConfigurationError,
  createPartnerClient,
  NotApprovedForProductionError,
  ScopeNotGrantedError,
  TokenRequestError,
} from '../src/index.js';

const all = ['read:loans', 'create:loan_draft', 'create:journal_update', 'create:repayment'];
const approved: MockClient = {
  partnerId: 'ptn_sdk_approved',
  clientId: 'prod-approved',
  clientSecret: 'prod-approved-secret-0123456789',
  authorizedScopes: all,
};
const revoked: MockClient = {
  partnerId: 'ptn_sdk_revoked',
  clientId: 'prod-revoked',
  clientSecret: 'prod-revoked-secret-0123456789',
  authorizedScopes: all,
};

let register: RegisterServer;
let production: RunningMock;
let staging: RunningMock;
beforeAll(async () => {
  register = await startRegisterServer();
  register.state.partners = [
    {
      partnerId: approved.partnerId,
      name: 'Approved',
      status: 'active',
      scopes: ['read:loans'],
      validUntil: null,
      decisionId: 'dec_a',
    },
    {
      partnerId: revoked.partnerId,
      name: 'Revoked',
      status: 'revoked',
      scopes: [],
      validUntil: null,
      decisionId: 'dec_r',
    },
  ];
  production = await startMock({
    profile: 'production',
    clients: [approved, revoked],
    register: { url: register.registerUrl, key: register.key },
  });
  staging = await startMock({ clients: [approved, revoked] });
});
afterAll(async () => {
  await production?.close();
  await staging?.close();
  await register?.close();
});

const productionClient = (who: MockClient, extra: object = {}) =>
  createPartnerClient({
    environment: 'production',
    authUrl: production.authUrl,
    baseUrl: production.baseUrl,
    clientId: who.clientId,
    clientSecret: who.clientSecret,
    env: {},
    maxRetries: 0,
    ...extra,
  });

describe('environment: production, against the production mock', () => {
  it('an approved partner lists its loans, with the scopes its approval gives and no more', async () => {
    const client = productionClient(approved);
    const page = await client.loans.list({ limit: 3 });
    expect(page.items).toHaveLength(3);
    // create:repayment is authorised for the client but not approved for production.
    await expect(client.repayments.create({ amount: 1 })).rejects.toBeInstanceOf(ScopeNotGrantedError);
  });

  it('a revoked partner gets NotApprovedForProductionError with the endpoint’s description', async () => {
    const error = await productionClient(revoked)
      .loans.list()
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(NotApprovedForProductionError);
    const refused = error as NotApprovedForProductionError;
    expect(refused.code).toBe('ERR_NOT_APPROVED_FOR_PRODUCTION');
    expect(refused.errorDescription).toBe(
      `partner ${revoked.partnerId} is not approved for production: its approval was revoked (decision dec_r). Certify your integration at ${register.url} (a certification run, then a reviewer's approval), then ask again`,
    );
    expect(refused.message).toContain(refused.errorDescription);
    expect(refused.message).not.toContain(revoked.clientSecret);
  });

  it('control: the same refusal with no environment named stays a TokenRequestError', async () => {
    const client = createPartnerClient({
      authUrl: production.authUrl,
      baseUrl: production.baseUrl,
      clientId: revoked.clientId,
      clientSecret: revoked.clientSecret,
      env: {},
    });
    const error = await client.loans.list().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TokenRequestError);
    expect(error).not.toBeInstanceOf(NotApprovedForProductionError);
  });

  it('control: the revoked partner is served by the staging mock (the refusal is the register’s doing)', async () => {
    const client = createPartnerClient({
      environment: 'staging',
      env: {
        PARTNER_AUTH_URL: staging.authUrl,
        PARTNER_BASE_URL: staging.baseUrl,
        PARTNER_CLIENT_ID: revoked.clientId,
        PARTNER_CLIENT_SECRET: revoked.clientSecret,
      },
    });
    expect((await client.loans.list({ limit: 1 })).items).toHaveLength(1);
  });

  it('never falls back to the staging variables: no production address, no client', () => {
    const stagingEnv = {
      PARTNER_AUTH_URL: staging.authUrl,
      PARTNER_BASE_URL: staging.baseUrl,
      PARTNER_CLIENT_ID: approved.clientId,
      PARTNER_CLIENT_SECRET: approved.clientSecret,
    };
    expect(() => createPartnerClient({ environment: 'production', env: stagingEnv } as never)).toThrow(
      ConfigurationError,
    );
    expect(() => createPartnerClient({ environment: 'production', env: stagingEnv } as never)).toThrow(
      /needs authUrl and baseUrl .* PARTNER_AUTH_URL and PARTNER_BASE_URL are not read in production/,
    );
  });

  it('does not send a staging PARTNER_AUDIENCE to production', async () => {
    const client = productionClient(approved, { env: { PARTNER_AUDIENCE: staging.baseUrl } });
    expect((await client.loans.list({ limit: 1 })).items).toHaveLength(1);
  });

  it('never shares a token between environments through one store, and refuses a provider of the other one', async () => {
    const store = createMemoryTokenStore();
    const before = production.tokenRequestCount();
    await productionClient(approved, { store }).loans.list({ limit: 1 });
    // The same auth server, client and audience, labelled staging: its own token.
    await createPartnerClient({
      environment: 'staging',
      authUrl: production.authUrl,
      baseUrl: production.baseUrl,
      clientId: approved.clientId,
      clientSecret: approved.clientSecret,
      store,
      env: {},
    }).loans.list({ limit: 1 });
    expect(production.tokenRequestCount() - before).toBe(2);
    // Control: a second production client on the store takes the production token.
    await productionClient(approved, { store }).loans.list({ limit: 1 });
    expect(production.tokenRequestCount() - before).toBe(2);

    const stagingProvider = createTokenProvider({
      environment: 'staging',
      authUrl: staging.authUrl,
      clientId: approved.clientId,
      clientSecret: approved.clientSecret,
      audience: staging.baseUrl,
    });
    expect(() =>
      productionClient(approved, {
        tokenProvider: stagingProvider,
        clientId: undefined,
        clientSecret: undefined,
      }),
    ).toThrow("the tokenProvider was created for environment 'staging' but this client is for 'production'");
  });
});
