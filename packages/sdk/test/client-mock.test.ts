// End to end against the real @partner-lending/mock: token endpoint, JWKS and the strict API.
import { type RunningMock, startMock } from '@partner-lending/mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  APIUserAbortError,
  AuthenticationError,
  createPartnerClient,
  PartnerApiError,
  type PartnerClientOptions,
  PermissionDeniedError,
  ScopeNotGrantedError,
} from '../src/index.js';

let mock: RunningMock;
beforeAll(async () => {
  mock = await startMock();
});
afterAll(() => mock.close());

/** A client configured the way a partner does it: addresses and credentials, nothing else. */
function clientFor(index: number, extra: Partial<PartnerClientOptions> = {}) {
  const credentials = mock.clients[index]!;
  return createPartnerClient({
    env: {
      PARTNER_AUTH_URL: mock.authUrl,
      PARTNER_BASE_URL: mock.baseUrl,
      PARTNER_CLIENT_ID: credentials.clientId,
      PARTNER_CLIENT_SECRET: credentials.clientSecret,
    },
    ...extra,
  });
}
const apiRequests = () => mock.requestLog().filter((entry) => entry.server === 'api');

describe('against the mock', () => {
  it('takes the per-call options as the last argument of list, iterate and pages too', async () => {
    const client = clientFor(0);
    const other = mock.clients[1]!.partnerId;
    await expect(client.loans.list({ limit: 1 }, { partnerId: other })).rejects.toBeInstanceOf(
      PermissionDeniedError,
    );
    const pages = client.loans.pages({ pageSize: 5 }, { partnerId: other });
    await expect(pages.next()).rejects.toBeInstanceOf(PermissionDeniedError);
    const loans = client.loans.iterate({ pageSize: 5 }, { signal: AbortSignal.abort() });
    await expect(loans.next()).rejects.toBeInstanceOf(APIUserAbortError);
    // The last argument wins over the same option beside the paging ones.
    const own = await client.loans.list(
      { limit: 2, partnerId: other },
      { partnerId: mock.clients[0]!.partnerId },
    );
    expect(own.items).toHaveLength(2);
  });

  it('lists and iterates loans without the partner touching a token, a scope or a partner id', async () => {
    const client = clientFor(0);
    const tokensBefore = mock.tokenRequestCount();
    const page = await client.loans.list({ limit: 5 });
    expect(page.items).toHaveLength(5);
    // The mock announces its total (X-Total-Count): the page says where it sits.
    expect(page.total).toBeGreaterThan(5);
    expect(page.nextOffset).toBe(5);
    const ids: unknown[] = [];
    for await (const loan of client.loans.iterate({ pageSize: 10 })) ids.push(loan.id);
    expect(ids).toHaveLength(25);
    expect(new Set(ids).size).toBe(25);
    const { data } = await client.GET('/v3/partner/{partner_id}/loans', { params: { query: { limit: 1 } } });
    expect(data).toEqual([
      expect.objectContaining({ id: 'loan-0001', partnerId: mock.clients[0]!.partnerId }),
    ]);
    expect(mock.tokenRequestCount() - tokensBefore).toBe(1);
  });

  it('creates a loan draft, a journal update and a repayment', async () => {
    const client = clientFor(0);
    expect(await client.loanDrafts.create({ amount: 1000, currency: 'EUR' })).toMatchObject({ amount: 1000 });
    expect(await client.journals.create({ entry: 'fee' })).toMatchObject({
      entry: 'fee',
      id: expect.any(String),
    });
    expect(await client.repayments.create({ amount: 5 })).toMatchObject({ amount: 5 });
  });

  it('raises ScopeNotGrantedError before anything reaches the API when the partner lacks the scope', async () => {
    const readOnly = clientFor(2);
    const before = apiRequests().length;
    const error = await readOnly.repayments.create({ amount: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ScopeNotGrantedError);
    expect((error as ScopeNotGrantedError).missingScopes).toEqual(['create:repayment']);
    const drafts = clientFor(1);
    await expect(drafts.journals.create({ entry: 1 })).rejects.toBeInstanceOf(ScopeNotGrantedError);
    expect(await drafts.loanDrafts.create({ amount: 1 })).toMatchObject({ amount: 1 });
    expect(
      apiRequests()
        .slice(before)
        .map((entry) => entry.target),
    ).toEqual([`/v3/partner/${mock.clients[1]!.partnerId}/loan_draft`]);
  });

  it('refreshes the token and replays once (body kept) when the signing key is rotated away', async () => {
    const client = clientFor(0);
    await client.loans.list({ limit: 1 });
    await client.repayments.create({ amount: 1 });
    const tokensBefore = mock.tokenRequestCount();
    await mock.rotateKeys({ retirePrevious: true });
    expect(await client.repayments.create({ amount: 42, note: 'replayed' })).toMatchObject({
      amount: 42,
      note: 'replayed',
    });
    expect((await client.loans.list({ limit: 1 })).items).toHaveLength(1);
    expect(mock.tokenRequestCount() - tokensBefore).toBe(2); // one per scope, each after its 401
  });

  it('refreshes after the provider’s tokens are invalidated', async () => {
    const client = clientFor(0);
    await client.loans.list({ limit: 1 });
    const tokensBefore = mock.tokenRequestCount();
    await client.tokenProvider.invalidate();
    await client.loans.list({ limit: 1 });
    expect(mock.tokenRequestCount() - tokensBefore).toBe(1);
  });

  it('replays a refused token only once, then reports AuthenticationError', async () => {
    const refusing = await startMock({ faults: ['api-reject-valid-tokens'] });
    try {
      const [partner] = refusing.clients;
      const client = createPartnerClient({
        authUrl: refusing.authUrl,
        baseUrl: refusing.baseUrl,
        clientId: partner!.clientId,
        clientSecret: partner!.clientSecret,
        env: {},
      });
      const error = await client.loans.list().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AuthenticationError);
      expect(error).toMatchObject({
        status: 401,
        errorCode: 'invalid_token',
        challenge: { scheme: 'Bearer' },
      });
      expect(refusing.tokenRequestCount()).toBe(2);
      expect(refusing.requestLog().filter((entry) => entry.server === 'api')).toHaveLength(2);
    } finally {
      await refusing.close();
    }
  });

  it('reports an already aborted signal as APIUserAbortError, also before the first token', async () => {
    const client = clientFor(0);
    const aborted = AbortSignal.abort(new Error('user gave up'));
    const before = apiRequests().length;
    const error = await client.loans.list({ signal: aborted }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIUserAbortError);
    expect((error as Error).cause).toEqual(new Error('user gave up'));
    await expect(client.GET('/v3/partner/{partner_id}/loans', { signal: aborted })).rejects.toBeInstanceOf(
      APIUserAbortError,
    );
    expect(apiRequests().length).toBe(before);
  });

  it('sends the token and API requests through the fetch option', async () => {
    const sent: string[] = [];
    const client = clientFor(0, {
      fetch: (input, init) => {
        const request = new Request(input, init);
        sent.push(`${request.method} ${new URL(request.url).pathname}`);
        return fetch(request);
      },
    });
    await client.loans.list({ limit: 1 });
    expect(sent).toEqual(['POST /oauth/token', `GET /v3/partner/${mock.clients[0]!.partnerId}/loans`]);
  });

  it('says what to do when asked for another partner’s loans', async () => {
    const client = clientFor(0);
    const other = mock.clients[1]!.partnerId;
    const error = await client.loans.list({ partnerId: other }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PermissionDeniedError);
    expect(error).toMatchObject({ status: 403, errorCode: 'access_denied', code: 'ERR_PERMISSION_DENIED' });
    expect((error as Error).message).toBe(
      `The partner API denied GET /v3/partner/${other}/loans (403 access_denied: the access token belongs to another partner than the partner_id of the path). A token may only be used on its own partner's paths: leave partnerId out to use the token's own, or check the partner's access in the partner console.`,
    );
  });

  it('never puts the secret or a whole token in an error or log line', async () => {
    const lines: string[] = [];
    const log = (message: string, details?: object) => lines.push(`${message} ${JSON.stringify(details)}`);
    const client = clientFor(0, { logger: { debug: log, warn: log } });
    await client.loans.list({ limit: 1 });
    const error = await client.loans.list({ partnerId: mock.clients[2]!.partnerId }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PartnerApiError);
    const token = await client.tokenProvider.getToken({ scopes: ['read:loans'] });
    const text = `${lines.join('\n')}\n${String(error)}\n${JSON.stringify(error)}`;
    expect(lines.length).toBeGreaterThan(1);
    expect(text).not.toContain(mock.clients[0]!.clientSecret);
    expect(text).not.toContain(token.accessToken);
  });
});
