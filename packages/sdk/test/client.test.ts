import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPartnerClient } from '../src/index.js';

const seen: { method: string | undefined; url: string | undefined; headers: IncomingMessage['headers'] }[] =
  [];
const server = createServer((req, res) => {
  seen.push({ method: req.method, url: req.url, headers: req.headers });
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify([{ id: 'loan-1' }]));
});
let baseUrl = '';

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('createPartnerClient (typed paths)', () => {
  it('sends the typed request to a real server and parses the answer', async () => {
    const client = createPartnerClient({ baseUrl, headers: { 'x-test': 'yes' } });
    const { data, response } = await client.GET('/v3/partner/{partner_id}/loans', {
      params: { path: { partner_id: 'p 1' }, query: { limit: 5, offset: 10 } },
    });
    expect(response.status).toBe(200);
    expect(data).toEqual([{ id: 'loan-1' }]);
    expect(seen.at(-1)).toMatchObject({
      method: 'GET',
      url: '/v3/partner/p%201/loans?limit=5&offset=10',
      headers: { 'x-test': 'yes' },
    });
  });

  it('refuses a base URL that is not absolute, saying what to pass', () => {
    expect(() => createPartnerClient({ baseUrl: 'partner-api' })).toThrow(
      'baseUrl "partner-api" is not an absolute URL; expected the partner API address, e.g. https://partner-api.example.',
    );
  });
});
