import { createRequire } from 'node:module';
import {
  type ApiOperationId,
  apiOperationIds,
  expandPath,
  type OperationId,
  operations,
} from '@partner-lending/spec';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockClient, type RunningMock, startMock } from '../src/index.js';
import { credentials, sharedSigningKey, tokenFor, tokenRequest } from './helpers.js';

// Every answer the mock gives for an operation of the spec uses a status and a content type that the
// spec documents for that operation (spec/openapi.yaml, bundled as @partner-lending/spec/openapi.json).
interface ResponseObject {
  $ref?: string;
  content?: Record<string, unknown>;
  headers?: Record<string, { $ref?: string; schema?: { pattern?: string } }>;
}
const spec = createRequire(import.meta.url)('@partner-lending/spec/openapi.json') as {
  paths: Record<string, Record<string, { responses: Record<string, ResponseObject> }>>;
};
/** Follows a local `#/…` reference of the bundled document. */
function resolve<T extends { $ref?: string }>(value: T | undefined): T | undefined {
  if (!value?.$ref) return value;
  let node: unknown = spec;
  for (const part of value.$ref.slice(2).split('/')) node = (node as Record<string, unknown>)[part];
  return resolve(node as T);
}
const responsesOf = (id: OperationId) => {
  const { path, method } = operations[id];
  return spec.paths[path]![method.toLowerCase()]!.responses;
};

function expectDocumented(id: OperationId, response: Response) {
  const responses = responsesOf(id);
  const key = String(response.status);
  const documented = resolve(responses[key] ?? responses[`${key[0]}XX`]);
  expect(documented, `${id} answered ${key}, which the spec does not document`).toBeDefined();
  const type = response.headers.get('content-type')?.split(';')[0];
  expect(Object.keys(documented!.content ?? {}), `${id} ${key}`).toContain(type);
  const pattern = resolve(documented!.headers?.['WWW-Authenticate'])?.schema?.pattern;
  if (pattern) expect(response.headers.get('www-authenticate') ?? '').toMatch(new RegExp(pattern));
}

const clients: MockClient[] = [
  {
    partnerId: 'p-1',
    clientId: 'c-1',
    clientSecret: 's-1',
    authorizedScopes: ['read:loans', 'create:loan_draft', 'create:journal_update', 'create:repayment'],
  },
  { partnerId: 'p-2', clientId: 'c-2', clientSecret: 's-2', authorizedScopes: ['read:loans'] },
];
let mock: RunningMock;
let full: string;
let readOnly: string;
beforeAll(async () => {
  mock = await startMock({ clients, signingKey: await sharedSigningKey() });
  full = await tokenFor(mock, clients[0]);
  readOnly = await tokenFor(mock, clients[1]);
});
afterAll(() => mock.close());

describe('answers documented by the spec', () => {
  it('token endpoint: 200, 400, 401 and 403 as documented', async () => {
    const cases: Record<string, string | undefined>[] = [
      credentials(mock, clients[0]!),
      credentials(mock, clients[0]!, { grant_type: 'password' }),
      credentials(mock, clients[0]!, { scope: 'nothing:known' }),
      credentials(mock, clients[0]!, { client_secret: 'wrong' }),
      credentials(mock, clients[0]!, { audience: 'https://other.invalid' }),
    ];
    const statuses: number[] = [];
    for (const params of cases) {
      const fields = Object.entries(params).filter(
        (entry): entry is [string, string] => entry[1] !== undefined,
      );
      const response = await fetch(mock.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(fields),
      });
      statuses.push(response.status);
      expectDocumented('requestToken', response);
    }
    expect(statuses).toEqual([200, 400, 400, 401, 403]);
    expect(
      (await tokenRequest(mock, {}, { headers: { 'content-type': 'text/plain' }, body: 'x' })).status,
    ).toBe(400);
  });

  it.each(apiOperationIds)(
    '%s: success, 400, 401, 403 (scope and partner) and 413 as documented',
    async (id: ApiOperationId) => {
      const { method, path } = operations[id];
      const call = async (token: string | undefined, partnerId = 'p-1', body = '{}', query = '') => {
        const response = await fetch(
          `${mock.baseUrl}${expandPath(path, { partner_id: partnerId })}${query}`,
          {
            method,
            headers: {
              ...(token && { authorization: `Bearer ${token}` }),
              'content-type': 'application/json',
            },
            ...(method === 'POST' && { body }),
          },
        );
        expectDocumented(id, response);
        await response.arrayBuffer();
        return response.status;
      };
      const statuses = [
        await call(full),
        method === 'GET' ? await call(full, 'p-1', '', '?limit=0') : await call(full, 'p-1', '[]'),
        await call(undefined),
        await call('not.a.token'),
        await call(full, 'p-2'),
      ];
      expect(statuses).toEqual([method === 'GET' ? 200 : 201, 400, 401, 401, 403]);
      if (id !== 'listLoans') {
        expect(await call(readOnly, 'p-2')).toBe(403);
        expect(await call(full, 'p-1', JSON.stringify({ pad: 'x'.repeat(1024 * 1024) }))).toBe(413);
      }
    },
  );
});
