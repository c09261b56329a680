import { ScopeNotGrantedError } from '@partner-lending/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  APIConnectionError,
  APITimeoutError,
  APIUserAbortError,
  ConfigurationError,
  createPartnerClient,
  InsufficientScopeError,
  InternalServerError,
  NotFoundError,
  type PartnerClientOptions,
  PermissionDeniedError,
  ResponseShapeError,
} from '../src/index.js';
import { json, recordingSleep, type SeenRequest, startServer, type TestServer } from './support/server.js';
import { fixedTokenProvider } from './support/token-provider.js';

// A partner API stand-in: loans of partner-1 (7 of them), partner-6 (6), partner-0 (none), a wrapped
// shape under /wrapped, and scripted failures. Every request must carry a bearer token.
const loansOf: Record<string, number> = { 'partner-1': 7, 'partner-6': 6, 'partner-0': 0 };
let failures: number[] = [];
let server: TestServer;

beforeAll(async () => {
  server = await startServer((request, response) => {
    const url = new URL(request.url, 'http://x');
    if (!request.headers.authorization?.startsWith('Bearer token-')) {
      return json(
        response,
        401,
        { error: 'invalid_token' },
        { 'www-authenticate': 'Bearer error="invalid_token"' },
      );
    }
    const failure = failures.shift();
    if (failure) return json(response, failure, { error: 'failed' }, { 'x-request-id': `req-${failure}` });
    const found = /^(\/prefix)?\/v3\/partner\/([^/]+)\/(loans|loan_draft|journals|repayments)$/.exec(
      url.pathname,
    );
    if (!found) return json(response, 404, { error: 'not_found' }, { 'x-request-id': 'req-404' });
    const [, , partner, resource] = found;
    if (partner === 'other')
      return json(response, 403, { error: 'access_denied' }, { 'www-authenticate': 'Bearer' });
    if (partner === 'no-scope') {
      return json(
        response,
        403,
        { error: 'insufficient_scope' },
        { 'www-authenticate': `Bearer error="insufficient_scope", scope="read:loans"` },
      );
    }
    if (resource !== 'loans') return json(response, 201, { ...JSON.parse(request.body), id: 'created-1' });
    const limit = Number(url.searchParams.get('limit') ?? 20);
    const offset = Number(url.searchParams.get('offset') ?? 0);
    const total = loansOf[decodeURIComponent(partner!)] ?? 3;
    const items = Array.from({ length: Math.max(0, Math.min(limit, total - offset)) }, (_, i) => ({
      id: `loan-${offset + i}`,
    }));
    if (partner === 'wrapped') return json(response, 200, { total, loans: items });
    if (partner === 'capped') {
      // 30 loans, at most 10 per page whatever limit asks, and no X-Total-Count.
      const capped = Array.from({ length: Math.max(0, Math.min(limit, 10, 30 - offset)) }, (_, i) => ({
        id: `loan-${offset + i}`,
      }));
      return json(response, 200, capped);
    }
    if (partner === 'echo') {
      // A server that echoes the request's Authorization header back in its error body and header.
      const echoed = request.headers.authorization ?? '';
      return json(
        response,
        400,
        {
          error: 'invalid_request',
          error_description: `bad header ${echoed}`,
          seen: { authorization: echoed },
        },
        { 'x-request-id': echoed },
      );
    }
    if (partner === 'ambiguous') return json(response, 200, { loans: items, links: [] });
    if (partner === 'hang') return; // never answers
    if (partner === 'cut-body') {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('[{"id":');
      return setTimeout(() => response.socket?.destroy(), 20); // the connection drops mid-body
    }
    if (partner === 'stall-body') {
      response.writeHead(200, { 'content-type': 'application/json' });
      return response.write('[{"id":'); // the head, then part of the body, then nothing
    }
    if (partner === 'html') {
      response.writeHead(200, { 'content-type': 'text/html' });
      return response.end('<html>login page</html>');
    }
    json(response, 200, items, { 'x-total-count': String(total) });
  });
});
afterAll(() => server.close());

function client(options: Partial<PartnerClientOptions> & { partnerId?: string; granted?: string[] } = {}) {
  const { partnerId, granted, ...rest } = options;
  const tokenProvider = fixedTokenProvider({
    ...(partnerId ? { partnerId } : {}),
    ...(granted ? { granted } : {}),
  });
  const { delays, sleep } = recordingSleep();
  const sdk = createPartnerClient({
    baseUrl: server.url,
    tokenProvider,
    env: {},
    sleep,
    random: () => 0.5,
    ...rest,
  });
  return { sdk, tokenProvider, delays };
}
const since = (start: number): SeenRequest[] => server.seen.slice(start);

describe('raw typed client', () => {
  it('fills partner_id from the token, asks for the operation’s scope and sends the bearer token', async () => {
    const { sdk, tokenProvider } = client();
    const start = server.seen.length;
    const { data, response } = await sdk.GET('/v3/partner/{partner_id}/loans', {
      params: { query: { limit: 2 } },
    });
    expect(response.status).toBe(200);
    expect(data).toEqual([{ id: 'loan-0' }, { id: 'loan-1' }]);
    expect(since(start)).toMatchObject([
      {
        method: 'GET',
        url: '/v3/partner/partner-1/loans?limit=2',
        headers: { authorization: 'Bearer token-1' },
      },
    ]);
    expect(tokenProvider.asked.every((scopes) => scopes?.join() === 'read:loans')).toBe(true);
  });

  it('keeps a partner_id that is given, percent-encoded, and the headers option', async () => {
    const { sdk } = client({ headers: { 'x-test': 'yes' } });
    const start = server.seen.length;
    await sdk.GET('/v3/partner/{partner_id}/loans', {
      params: { path: { partner_id: 'p 1' }, query: { limit: 5, offset: 10 } },
    });
    expect(since(start)).toMatchObject([
      { method: 'GET', url: '/v3/partner/p%201/loans?limit=5&offset=10', headers: { 'x-test': 'yes' } },
    ]);
  });

  it('returns error answers as { error, response } instead of throwing', async () => {
    const { sdk } = client();
    const { data, error, response } = await sdk.POST('/v3/partner/{partner_id}/repayments', {
      params: { path: { partner_id: 'other' } },
      body: { amount: 1 },
    });
    expect(data).toBeUndefined();
    expect(response.status).toBe(403);
    expect(error).toEqual({ error: 'access_denied' });
  });

  it('works under a base URL with a path prefix', async () => {
    const { sdk, tokenProvider } = client({ baseUrl: `${server.url}/prefix/` });
    const start = server.seen.length;
    await sdk.POST('/v3/partner/{partner_id}/journals', { body: { entry: 1 } });
    expect(since(start)[0]?.url).toBe('/prefix/v3/partner/partner-1/journals');
    expect(tokenProvider.asked.at(-1)).toEqual(['create:journal_update']);
  });

  it('refuses a body that is not JSON with ConfigurationError (not a TypeError), before anything is sent', async () => {
    const { sdk } = client();
    const start = server.seen.length;
    // A serialiser that hands openapi-fetch a FormData: the SDK sends JSON bodies only.
    const asForm = { bodySerializer: () => new FormData() } as object;
    const error = await sdk
      .POST('/v3/partner/{partner_id}/journals', { body: { entry: 1 }, ...asForm })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect(error).not.toBeInstanceOf(TypeError);
    expect(error).toMatchObject({
      code: 'ERR_CONFIGURATION',
      message: 'the SDK sends JSON bodies only (a string once serialised)',
    });
    expect(since(start)).toEqual([]);
    // Negative control: the same call with the JSON body is sent.
    await sdk.POST('/v3/partner/{partner_id}/journals', { body: { entry: 1 } });
    expect(since(start)).toHaveLength(1);
  });
});

describe('loans', () => {
  it('list returns the parsed body and passes limit and offset', async () => {
    const { sdk } = client();
    const page = await sdk.loans.list({ limit: 2, offset: 5 });
    expect(page).toMatchObject({
      items: [{ id: 'loan-5' }, { id: 'loan-6' }],
      offset: 5,
      limit: 2,
      total: 7,
      nextOffset: undefined,
      body: [{ id: 'loan-5' }, { id: 'loan-6' }],
    });
    expect(page.response.status).toBe(200);
    expect((await sdk.loans.list({ limit: 2 })).nextOffset).toBe(2);
  });

  it('iterate: the first page only costs one request', async () => {
    const { sdk } = client();
    const start = server.seen.length;
    for await (const loan of sdk.loans.iterate({ pageSize: 3 })) {
      expect(loan).toEqual({ id: 'loan-0' });
      break;
    }
    expect(since(start).map((seen) => seen.url)).toEqual(['/v3/partner/partner-1/loans?limit=3&offset=0']);
  });

  it('iterate: every loan across pages, stopping at the announced total', async () => {
    const { sdk } = client();
    const start = server.seen.length;
    const ids: unknown[] = [];
    for await (const loan of sdk.loans.iterate({ pageSize: 3 })) ids.push(loan.id);
    expect(ids).toEqual(['loan-0', 'loan-1', 'loan-2', 'loan-3', 'loan-4', 'loan-5', 'loan-6']);
    expect(since(start).map((seen) => new URL(seen.url, 'http://x').searchParams.get('offset'))).toEqual([
      '0',
      '3',
      '6',
    ]);
  });

  it('iterate: starts at the offset given', async () => {
    const { sdk } = client();
    const start = server.seen.length;
    const ids: unknown[] = [];
    for await (const loan of sdk.loans.iterate({ pageSize: 3, offset: 5 })) ids.push(loan.id);
    expect(ids).toEqual(['loan-5', 'loan-6']);
    expect(since(start).map((seen) => seen.url)).toEqual(['/v3/partner/partner-1/loans?limit=3&offset=5']);
  });

  it('iterate: an empty result yields nothing after one request', async () => {
    const { sdk } = client({ partnerId: 'partner-0' });
    const start = server.seen.length;
    const loans = [];
    for await (const loan of sdk.loans.iterate()) loans.push(loan);
    expect(loans).toEqual([]);
    expect(since(start).map((seen) => seen.url)).toEqual(['/v3/partner/partner-0/loans?limit=25&offset=0']);
  });

  it('iterate: a total that is an exact multiple of the page size costs no extra request', async () => {
    const { sdk } = client({ partnerId: 'partner-6' });
    const start = server.seen.length;
    const loans = [];
    for await (const loan of sdk.loans.iterate({ pageSize: 3 })) loans.push(loan);
    expect(loans).toHaveLength(6);
    expect(since(start)).toHaveLength(2);
  });

  it('iterate: gets all 30 loans from a server that caps pages at 10 (advancing by what it received)', async () => {
    const { sdk } = client({ partnerId: 'capped' });
    const start = server.seen.length;
    const ids: unknown[] = [];
    for await (const loan of sdk.loans.iterate({ pageSize: 25 })) ids.push(loan.id);
    expect(ids).toEqual(Array.from({ length: 30 }, (_, i) => `loan-${i}`));
    expect(since(start).map((seen) => new URL(seen.url, 'http://x').searchParams.get('offset'))).toEqual([
      '0',
      '10',
      '20',
      '30',
    ]);
  });

  it('pages: yields each page with its items, body and offset; finds items in a wrapped body', async () => {
    const { sdk } = client({ partnerId: 'wrapped' });
    const pages = [];
    for await (const page of sdk.loans.pages({ pageSize: 2 })) pages.push(page);
    expect(pages.map((page) => [page.offset, page.items.length])).toEqual([
      [0, 2],
      [2, 1],
    ]);
    expect(pages[0]?.body).toEqual({ total: 3, loans: [{ id: 'loan-0' }, { id: 'loan-1' }] });
  });

  it('asks for the items selector when the shape is ambiguous, and uses it when given', async () => {
    const { sdk } = client({ partnerId: 'ambiguous' });
    const iterator = sdk.loans.iterate();
    await expect(iterator.next()).rejects.toBeInstanceOf(ResponseShapeError);
    const ids = [];
    for await (const loan of sdk.loans.iterate({ items: 'loans' })) ids.push(loan.id);
    expect(ids).toEqual(['loan-0', 'loan-1', 'loan-2']);
    const typed = sdk.loans.iterate({ items: (body) => (body as { loans: { id: string }[] }).loans });
    expect((await typed.next()).value).toEqual({ id: 'loan-0' });
  });

  it('refuses a page size that is not a whole number ≥ 1', () => {
    const { sdk } = client();
    expect(() => sdk.loans.pages({ pageSize: 0 })).toThrow(
      new ConfigurationError('pageSize 0 is not a whole number ≥ 1; pass e.g. 25 (the default).'),
    );
  });
});

describe('creates', () => {
  it('send the JSON body with the operation’s scope and return the answer', async () => {
    const { sdk, tokenProvider } = client();
    const start = server.seen.length;
    expect(await sdk.loanDrafts.create({ amount: 1000 })).toEqual({ amount: 1000, id: 'created-1' });
    expect(await sdk.journals.create({ entry: 'x' })).toMatchObject({ entry: 'x' });
    expect(await sdk.repayments.create({ amount: 5 }, { partnerId: 'partner-9' })).toMatchObject({
      amount: 5,
    });
    expect(since(start)).toMatchObject([
      { method: 'POST', url: '/v3/partner/partner-1/loan_draft', body: '{"amount":1000}' },
      { method: 'POST', url: '/v3/partner/partner-1/journals' },
      { method: 'POST', url: '/v3/partner/partner-9/repayments' },
    ]);
    expect(since(start)[0]?.headers['content-type']).toBe('application/json');
    expect([...new Set(tokenProvider.asked.map((scopes) => scopes?.join()))]).toEqual([
      'create:loan_draft',
      'create:journal_update',
      'create:repayment',
    ]);
  });

  it('are not retried on 503 unless the call opts in', async () => {
    const { sdk, delays } = client();
    failures = [503];
    const error = await sdk.repayments.create({ amount: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InternalServerError);
    expect(error).toMatchObject({ status: 503, requestId: 'req-503', attempts: 1 });
    expect(delays).toEqual([]);
    failures = [503];
    expect(await sdk.repayments.create({ amount: 2 }, { maxRetries: 1 })).toMatchObject({ amount: 2 });
    expect(delays).toEqual([250]);
  });
});

describe('errors and retries through the client', () => {
  it('retries a GET on 5xx and 429, then succeeds', async () => {
    const { sdk, delays } = client();
    failures = [500, 429];
    expect((await sdk.loans.list({ limit: 1 })).items).toEqual([{ id: 'loan-0' }]);
    // Full jitter (random 0.5) under a bound of 0.5 s doubling.
    expect(delays).toEqual([250, 500]);
  });

  it('throws the mapped error with the request id after the retries', async () => {
    const { sdk } = client({ maxRetries: 1 });
    failures = [502, 502];
    const error = await sdk.loans.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InternalServerError);
    expect((error as Error).message).toBe(
      'The partner API failed on GET /v3/partner/partner-1/loans (502 failed, request id req-502, 2 attempts). Retry later; if it persists, give support the request id.',
    );
  });

  it('maps 403 insufficient_scope and plain 403 to their classes', async () => {
    const { sdk } = client();
    await expect(sdk.loans.list({ partnerId: 'no-scope' })).rejects.toBeInstanceOf(InsufficientScopeError);
    const denied = await sdk.loans.list({ partnerId: 'other' }).catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(PermissionDeniedError);
    expect(denied).not.toBeInstanceOf(InsufficientScopeError);
  });

  it('reports a success answer that is not JSON as ResponseShapeError', async () => {
    const { sdk } = client({ partnerId: 'html' });
    const error = await sdk.loans.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResponseShapeError);
    expect((error as Error).message).toBe(
      'The partner API answered GET /v3/partner/html/loans with a body that is not JSON. Check baseUrl (PARTNER_BASE_URL) points at the partner API.',
    );
  });

  it('stops on the caller’s signal and applies a per-call timeout', async () => {
    const { sdk } = client();
    const controller = new AbortController();
    controller.abort();
    const start = server.seen.length;
    await expect(sdk.loans.list({ signal: controller.signal })).rejects.toBeInstanceOf(APIUserAbortError);
    await expect(
      sdk.GET('/v3/partner/{partner_id}/loans', { signal: controller.signal }),
    ).rejects.toBeInstanceOf(APIUserAbortError);
    expect(since(start)).toEqual([]);
    const slow = await sdk.loans
      .list({ partnerId: 'hang', timeoutMs: 50, maxRetries: 0 })
      .catch((e: unknown) => e);
    expect(slow).toBeInstanceOf(APITimeoutError);
  });

  it('reports the caller’s abort while the body streams as APIUserAbortError', async () => {
    const { sdk } = client({ partnerId: 'stall-body' });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('user gave up')), 50);
    const error = await sdk.loans.list({ signal: controller.signal }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIUserAbortError);
    expect((error as Error).cause).toEqual(new Error('user gave up'));
    const raw = new AbortController();
    setTimeout(() => raw.abort(), 50);
    await expect(sdk.GET('/v3/partner/{partner_id}/loans', { signal: raw.signal })).rejects.toBeInstanceOf(
      APIUserAbortError,
    );
  });

  it('reports a connection dropped while the body streams as APIConnectionError', async () => {
    const { sdk } = client({ partnerId: 'cut-body' });
    const error = await sdk.loans.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIConnectionError);
    expect((error as Error).message).toMatch(
      /^The connection to the partner API dropped while reading the answer to GET \/v3\/partner\/cut-body\/loans \(.+\)\. Retry the call; check the network if it persists\.$/,
    );
    expect((error as Error).cause).toBeInstanceOf(TypeError);
  });

  it('applies the client’s timeoutMs to the whole call, retries included', async () => {
    const { sdk } = client({ partnerId: 'hang', timeoutMs: 50, maxRetries: 1 });
    const start = server.seen.length;
    const error = await sdk.loans.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APITimeoutError);
    expect((error as Error).message).toBe(
      'The partner API did not answer GET /v3/partner/hang/loans within 50 ms (timeoutMs bounds the whole call: token, attempts, waits and body). Raise timeoutMs or retry later.',
    );
    expect(since(start)).toHaveLength(1);
  });

  it('sends through the fetch option', async () => {
    const sent: string[] = [];
    const { sdk } = client({
      fetch: (input, init) => {
        const request = new Request(input, init);
        sent.push(`${request.method} ${new URL(request.url).pathname}`);
        return fetch(request);
      },
    });
    await sdk.loans.list({ limit: 1 });
    await sdk.POST('/v3/partner/{partner_id}/journals', { body: { entry: 1 } });
    expect(sent).toEqual(['GET /v3/partner/partner-1/loans', 'POST /v3/partner/partner-1/journals']);
  });

  it('hands fetch the URL and one init per GET (fetch builds the only Request; redirects are manual)', async () => {
    const seen: { input: string; init: string[]; signal: boolean; redirect: unknown }[] = [];
    const { sdk } = client({
      fetch: (input, init) => {
        seen.push({
          input: typeof input,
          init: Object.keys(init ?? {}).sort(),
          signal: init?.signal instanceof AbortSignal,
          redirect: init?.redirect,
        });
        return fetch(input, init);
      },
    });
    await sdk.loans.list({ limit: 1 });
    expect(seen).toEqual([
      {
        input: 'string',
        init: ['headers', 'method', 'redirect', 'signal'],
        signal: true,
        redirect: 'manual',
      },
    ]);
  });

  it('maps 404', async () => {
    const { sdk } = client({ baseUrl: `${server.url}/elsewhere` });
    const error = await sdk.loans.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toMatchObject({ requestId: 'req-404', status: 404 });
  });

  it('raises ScopeNotGrantedError before sending anything when the scope was not granted', async () => {
    const { sdk } = client({ granted: ['read:loans'] });
    const start = server.seen.length;
    await expect(sdk.repayments.create({ amount: 1 })).rejects.toBeInstanceOf(ScopeNotGrantedError);
    await expect(
      sdk.POST('/v3/partner/{partner_id}/loan_draft', {
        params: { path: { partner_id: 'partner-1' } },
        body: {},
      }),
    ).rejects.toBeInstanceOf(ScopeNotGrantedError);
    expect(since(start)).toEqual([]);
  });

  it('logs each answer and retry without the token', async () => {
    const lines: string[] = [];
    const logger = {
      debug: (message: string, details?: object) => lines.push(`debug ${message} ${JSON.stringify(details)}`),
      warn: (message: string) => lines.push(`warn ${message}`),
    };
    const { sdk } = client({ logger });
    failures = [503];
    await sdk.loans.list({ limit: 1 });
    expect(lines[0]).toMatch(
      /^debug GET \/v3\/partner\/partner-1\/loans → 503 \{"attempt":1,"ms":\d+,"requestId":"req-503"\}$/,
    );
    expect(lines[1]).toBe('warn GET /v3/partner/partner-1/loans → 503; retry 1 of 2 in 250 ms');
    expect(lines[2]).toMatch(/^debug GET \/v3\/partner\/partner-1\/loans → 200/);
    expect(lines.join('\n')).not.toContain('token-');
  });
});

describe('configuration', () => {
  it('names every option and variable that is missing, at once', () => {
    expect(() => createPartnerClient({ env: { PARTNER_BASE_URL: server.url } })).toThrow(
      '3 options are missing: authUrl (PARTNER_AUTH_URL: the authentication service address, e.g. https://auth.partner.example); clientId (PARTNER_CLIENT_ID: the client id from the partner administration console); clientSecret (PARTNER_CLIENT_SECRET: the client secret from the partner administration console). Pass them to createPartnerClient({ … }) or set the environment variables.',
    );
    expect(() =>
      createPartnerClient({
        env: { PARTNER_BASE_URL: server.url, PARTNER_AUTH_URL: server.url, PARTNER_CLIENT_ID: 'x' },
      }),
    ).toThrow(
      'An option is missing: clientSecret (PARTNER_CLIENT_SECRET: the client secret from the partner administration console). Pass it to createPartnerClient({ … }) or set the environment variable.',
    );
  });

  it('refuses a base URL that is not absolute, saying what to pass', () => {
    expect(() => client({ baseUrl: 'partner-api' })).toThrow(
      'baseUrl "partner-api" is not an absolute URL; expected the partner API address, e.g. https://partner-api.example.',
    );
  });

  it('builds from the PARTNER_* variables alone', () => {
    const sdk = createPartnerClient({
      env: {
        PARTNER_AUTH_URL: 'http://127.0.0.1:1',
        PARTNER_BASE_URL: server.url,
        PARTNER_CLIENT_ID: 'id',
        PARTNER_CLIENT_SECRET: 'secret',
      },
    });
    expect(typeof sdk.loans.list).toBe('function');
  });
});
