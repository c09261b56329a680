import { apiOperationIds, expandPath, operations } from '@partner-lending/spec';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loansPaging, type MockClient, type RunningMock, startMock } from '../src/index.js';
import { getLoans, pathUrl, sharedSigningKey, tokenFor } from './helpers.js';

const clients: MockClient[] = [
  {
    partnerId: 'p-a',
    clientId: 'c-a',
    clientSecret: 's-a',
    authorizedScopes: ['read:loans', 'create:loan_draft', 'create:journal_update', 'create:repayment'],
  },
  {
    partnerId: 'p-b',
    clientId: 'c-b',
    clientSecret: 's-b',
    authorizedScopes: ['read:loans', 'create:loan_draft'],
  },
];

let mock: RunningMock;
let tokenA: string;
let tokenB: string;
beforeAll(async () => {
  mock = await startMock({ signingKey: await sharedSigningKey(), clients });
  tokenA = await tokenFor(mock, clients[0]);
  tokenB = await tokenFor(mock, clients[1]);
});
afterAll(() => mock.close());

const post = (url: string, body: string, token = tokenA, contentType = 'application/json') =>
  fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': contentType },
    body,
  });

describe('api-server: routes from the spec', () => {
  it('serves every API operation of the spec at its method and path', async () => {
    for (const id of apiOperationIds) {
      const { method, path } = operations[id];
      const response = await fetch(`${mock.baseUrl}${expandPath(path, { partner_id: 'p-a' })}`, {
        method,
        headers: { authorization: `Bearer ${tokenA}`, 'content-type': 'application/json' },
        ...(method === 'POST' && { body: '{}' }),
      });
      expect(response.status, id).toBe(method === 'GET' ? 200 : 201);
    }
  });

  it('answers 404 on an unknown path, with or without a token', async () => {
    for (const path of [
      '/',
      '/v3/partner/p-a',
      '/v3/partner/p-a/loans/',
      '/v2/partner/p-a/loans',
      '/oauth/token',
    ]) {
      const response = await fetch(`${mock.baseUrl}${path}`);
      expect(response.status, path).toBe(404);
      expect(response.headers.get('content-type')).toBe('application/json');
    }
  });

  it('answers 405 with Allow for a wrong method', async () => {
    const loans = await fetch(pathUrl(mock, 'loans'), { method: 'DELETE' });
    expect(loans.status).toBe(405);
    expect(loans.headers.get('allow')).toBe('GET');
    const draft = await fetch(pathUrl(mock, 'loan_draft'), {
      headers: { authorization: `Bearer ${tokenA}` },
    });
    expect(draft.status).toBe(405);
    expect(draft.headers.get('allow')).toBe('POST');
  });
});

describe('api-server: GET loans', () => {
  it(`answers a JSON array of ${loansPaging.defaultLimit} loans by default, with X-Total-Count`, async () => {
    const answer = await getLoans(mock, `Bearer ${tokenA}`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('application/json');
    expect(answer.headers.get('x-total-count')).toBe('25');
    const loans = JSON.parse(answer.text);
    expect(loans).toHaveLength(20);
    expect(loans[0]).toMatchObject({ id: 'loan-0001', partnerId: 'p-a', currency: 'EUR' });
  });

  it('pages with limit and offset', async () => {
    const page = JSON.parse((await getLoans(mock, `Bearer ${tokenA}`, undefined, '?limit=2&offset=3')).text);
    expect(page.map((loan: { id: string }) => loan.id)).toEqual(['loan-0004', 'loan-0005']);
    const end = JSON.parse(
      (await getLoans(mock, `Bearer ${tokenA}`, undefined, '?offset=24&limit=100')).text,
    );
    expect(end).toHaveLength(1);
    const past = JSON.parse((await getLoans(mock, `Bearer ${tokenA}`, undefined, '?offset=1000')).text);
    expect(past).toEqual([]);
  });

  it('answers 400 for bad limit or offset values', async () => {
    for (const query of [
      'limit=0',
      'limit=101',
      'limit=-1',
      'limit=abc',
      'limit=1.5',
      'limit=',
      'offset=-1',
      'offset=x',
      'limit=1&limit=2',
      'offset=1e3',
    ]) {
      const answer = await getLoans(mock, `Bearer ${tokenA}`, undefined, `?${query}`);
      expect(answer.status, query).toBe(400);
      expect(JSON.parse(answer.text).error).toBe('invalid_request');
    }
    const answer = await getLoans(mock, `Bearer ${tokenA}`, undefined, '?limit=0');
    expect(JSON.parse(answer.text).error_description).toBe('limit must be an integer between 1 and 100');
  });

  it('has demo loans per partner', async () => {
    const b = JSON.parse((await getLoans(mock, `Bearer ${tokenB}`, 'p-b')).text);
    expect(b[0].partnerId).toBe('p-b');
  });
});

describe('api-server: the page cache', () => {
  it('answers the same pages, headers included, with and without caches, first and second time', async () => {
    const clock = () => Date.UTC(2026, 0, 1);
    const plain = await startMock({ signingKey: await sharedSigningKey(), clients, clock, caches: false });
    const cached = await startMock({ signingKey: await sharedSigningKey(), clients, clock });
    try {
      const queries = [
        '',
        '?limit=5',
        '?limit=5&offset=5',
        '?offset=24',
        '?offset=25',
        '?offset=9999',
        '?limit=100',
      ];
      for (const [partner, client] of [
        ['p-a', clients[0]!],
        ['p-b', clients[1]!],
      ] as const) {
        const expected = [];
        const plainToken = await tokenFor(plain, client);
        for (const query of queries) {
          const answer = await getLoans(plain, `Bearer ${plainToken}`, partner, query);
          expected.push([answer.status, answer.headers.get('x-total-count'), answer.text]);
        }
        const cachedToken = await tokenFor(cached, client);
        for (let pass = 0; pass < 2; pass += 1) {
          const got = [];
          for (const query of queries) {
            const answer = await getLoans(cached, `Bearer ${cachedToken}`, partner, query);
            got.push([answer.status, answer.headers.get('x-total-count'), answer.text]);
          }
          expect(got).toEqual(expected);
        }
        expect(new Set(expected.map((entry) => entry[2])).size).toBe(6); // only the two past the end agree
      }
    } finally {
      await Promise.all([plain.close(), cached.close()]);
    }
  });
});

describe('api-server: creates', () => {
  it('stores a JSON object and answers 201 with it and a generated id', async () => {
    const response = await post(pathUrl(mock, 'journals'), JSON.stringify({ reference: 'r-1', id: 'mine' }));
    expect(response.status).toBe(201);
    expect(response.headers.get('content-type')).toBe('application/json');
    const body = await response.json();
    expect(body).toEqual({ reference: 'r-1', id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
  });

  it('answers 400 for malformed JSON, non-objects and non-JSON content types', async () => {
    for (const [body, type] of [
      ['{', 'application/json'],
      ['[1]', 'application/json'],
      ['null', 'application/json'],
      ['"text"', 'application/json'],
      ['', 'application/json'],
      ['{}', 'text/plain'],
      ['a=1', 'application/x-www-form-urlencoded'],
    ] as const) {
      const response = await post(pathUrl(mock, 'repayments'), body, tokenA, type);
      expect(response.status, `${type} ${body}`).toBe(400);
      expect((await response.json()).error).toBe('invalid_request');
    }
  });

  it('answers 413 for a body over 1 MiB and accepts one of exactly 1 MiB', async () => {
    const over = JSON.stringify({ pad: 'x'.repeat(1024 * 1024) });
    const response = await post(pathUrl(mock, 'loan_draft'), over);
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({
      error: 'invalid_request',
      error_description: 'the body is larger than 1 MiB',
    });
    const exact = JSON.stringify({ pad: 'x'.repeat(1024 * 1024 - 10) });
    expect(Buffer.byteLength(exact)).toBe(1024 * 1024);
    expect((await post(pathUrl(mock, 'loan_draft'), exact)).status).toBe(201);
  });

  it('answers 400 for JSON nested deeper than 64 levels, before storing it, and accepts 64 levels', async () => {
    // About 4,500 levels in 9 KB once made the answer's serialisation throw (a 500, and the object kept).
    const deep = `${'['.repeat(4500)}${']'.repeat(4500)}`;
    for (const body of [`{"a":${deep}}`, `{"a":${'{"b":'.repeat(64)}1${'}'.repeat(64)}}`]) {
      const response = await post(pathUrl(mock, 'loan_draft'), body);
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({
        error: 'invalid_request',
        error_description: 'the JSON body nests deeper than 64 levels; send a flatter object',
      });
    }
    const atLimit = `{"a":${'['.repeat(63)}${']'.repeat(63)}}`;
    expect((await post(pathUrl(mock, 'loan_draft'), atLimit)).status).toBe(201);
    // Brackets inside strings (with escaped quotes) are not nesting.
    const inString = JSON.stringify({ text: `\\"${'['.repeat(500)}` });
    const answer = await post(pathUrl(mock, 'loan_draft'), inString);
    expect(answer.status).toBe(201);
    expect((await answer.json()).text).toBe(`\\"${'['.repeat(500)}`);
    expect(mock.internalErrorCount()).toBe(0);
  });

  it('under api-accept-body-token, reads no token from a JSON body nested deeper than 64 levels', async () => {
    const open = await startMock({
      signingKey: await sharedSigningKey(),
      clients,
      faults: ['api-accept-body-token'],
    });
    try {
      const genuine = await tokenFor(open, clients[0]);
      const send = (extra: string) =>
        fetch(pathUrl(open, 'loan_draft', 'p-a'), {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: `{"access_token":"${genuine}","x":${extra}}`,
        }).then((response) => response.status);
      expect(await send('[[1]]')).toBe(201);
      expect(await send(`${'['.repeat(64)}${']'.repeat(64)}`)).toBe(401);
    } finally {
      await open.close();
    }
  });

  it('checks the scope of each create path', async () => {
    const response = await post(pathUrl(mock, 'journals', 'p-b'), '{}', tokenB);
    expect(response.status).toBe(403);
    expect(response.headers.get('www-authenticate')).toBe(
      'Bearer error="insufficient_scope", scope="create:journal_update"',
    );
    expect((await post(pathUrl(mock, 'loan_draft', 'p-b'), '{}', tokenB)).status).toBe(201);
  });

  it('keeps partners apart', async () => {
    expect((await post(pathUrl(mock, 'loan_draft', 'p-a'), '{}', tokenB)).status).toBe(403);
  });

  it('answers 404 for a partner it does not know (reachable with api-skip-partner-isolation)', async () => {
    const open = await startMock({
      signingKey: await sharedSigningKey(),
      clients,
      faults: ['api-skip-partner-isolation'],
    });
    try {
      const token = await tokenFor(open, clients[0]);
      const answer = await getLoans(open, `Bearer ${token}`, 'p-unknown');
      expect([answer.status, JSON.parse(answer.text).error]).toEqual([404, 'not_found']);
      expect((await getLoans(open, `Bearer ${token}`, 'p-b')).status).toBe(200);
    } finally {
      await open.close();
    }
  });
});
