import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loansPaging, type RunningMock, startMock } from '../src/index.js';
import { getLoans, tokenFor } from './helpers.js';

// The Partner Lending API documentation leaves the bounds of `limit` unspecified. The OpenAPI document
// models that openly (no `maximum`, a 400 for a value a server refuses) and names the mock's own bound as
// `x-mock-maximum`; the mock refuses values above it. This test holds the two together, against the real
// mock: the document's bound is the mock's, the bound's value is answered 200 and the next one 400.

const document = JSON.parse(
  readFileSync(createRequire(import.meta.url).resolve('@partner-lending/spec/openapi.json'), 'utf8'),
);
const listLoans = Object.values(document.paths as Record<string, Record<string, { operationId?: string }>>)
  .flatMap((item) => Object.values(item))
  .find((operation) => operation.operationId === 'listLoans') as {
  parameters: Array<{
    name: string;
    schema: Record<string, unknown>;
    'x-mock-maximum'?: number;
    description: string;
  }>;
  responses: Record<string, unknown>;
};
const limit = listLoans.parameters.find((parameter) => parameter.name === 'limit')!;

let mock: RunningMock;
let bearer: string;
beforeAll(async () => {
  mock = await startMock();
  bearer = `Bearer ${await tokenFor(mock)}`;
});
afterAll(() => mock?.close());

describe('limit: the OpenAPI document and the mock agree on the bound, and say whose it is', () => {
  it('the document sets no maximum (the API specifies none) and names the mock’s bound as x-mock-maximum', () => {
    expect(limit.schema).toEqual({ type: 'integer', minimum: 1 });
    expect(limit['x-mock-maximum']).toBe(loansPaging.maxLimit);
    expect(limit.description).toMatch(/the mock's choice, not the API's/);
    expect(Object.keys(listLoans.responses)).toContain('400');
  });

  it('the mock answers the bound 200 and one above it 400 invalid_request, as the document says', async () => {
    const atBound = await getLoans(mock, bearer, undefined, `?limit=${limit['x-mock-maximum']}`);
    expect(atBound.status).toBe(200);
    const above = await getLoans(mock, bearer, undefined, `?limit=${limit['x-mock-maximum']! + 1}`);
    expect(above.status).toBe(400);
    expect(JSON.parse(above.text).error).toBe('invalid_request');
    // Control: below the document's minimum is refused too, and an ordinary value is not.
    expect((await getLoans(mock, bearer, undefined, '?limit=0')).status).toBe(400);
    expect((await getLoans(mock, bearer, undefined, '?limit=50')).status).toBe(200);
  });
});
