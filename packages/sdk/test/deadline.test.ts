// The call's deadline (timeoutMs) holds whatever the token endpoint and the API do.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type RunningMock, startMock } from '@partner-lending/mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APITimeoutError, createPartnerClient, PartnerApiError, RateLimitError } from '../src/index.js';
import { json, recordingSleep, startServer, type TestServer } from './support/server.js';

let mock: RunningMock;
let hanging: Server;
let hangingUrl: string;
let api: TestServer;
beforeAll(async () => {
  mock = await startMock();
  // A token endpoint that takes the request and never answers.
  hanging = createServer(() => {});
  await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
  hangingUrl = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`;
  // An API that asks to wait 20 s on every call.
  api = await startServer((_request, response) =>
    json(response, 429, { error: 'slow_down' }, { 'retry-after': '20' }),
  );
});
afterAll(async () => {
  hanging.closeAllConnections();
  await new Promise((resolve) => hanging.close(resolve));
  await api.close();
  await mock.close();
});

describe('the call deadline', () => {
  it('bounds the first call’s token lookup (the partner id comes from the token) by timeoutMs', async () => {
    const client = createPartnerClient({
      authUrl: hangingUrl,
      baseUrl: mock.baseUrl,
      audience: mock.audience,
      clientId: 'id',
      clientSecret: 'secret',
      timeoutMs: 300,
      env: {},
    });
    const error = await client.loans.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APITimeoutError);
    expect(error).toBeInstanceOf(PartnerApiError);
    expect((error as Error).message).toBe(
      'No access token for GET /v3/partner/{partner_id}/loans within 300 ms: the token endpoint did not answer in time. timeoutMs bounds the whole call, the token lookup included; check the auth service (PARTNER_AUTH_URL) or raise timeoutMs.',
    );
  }, 5_000);

  it('bounds a later call’s token step too, when partner_id is given', async () => {
    const client = createPartnerClient({
      authUrl: hangingUrl,
      baseUrl: mock.baseUrl,
      audience: mock.audience,
      clientId: 'id',
      clientSecret: 'secret',
      env: {},
    });
    const error = await client.loans.list({ partnerId: 'p-1', timeoutMs: 200 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APITimeoutError);
    expect((error as Error).message).toMatch(
      /^No access token for GET \/v3\/partner\/p-1\/loans within 200 ms/,
    );
  }, 5_000);

  it('fails fast with the throttle error when Retry-After is longer than what is left', async () => {
    const [partner] = mock.clients;
    const { sleep, delays } = recordingSleep();
    const client = createPartnerClient({
      authUrl: mock.authUrl,
      baseUrl: api.url,
      audience: mock.audience,
      clientId: partner!.clientId,
      clientSecret: partner!.clientSecret,
      timeoutMs: 2_000,
      sleep,
      env: {},
    });
    const before = api.seen.length;
    const error = await client.loans.list({ partnerId: 'p-1' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).retryAfterMs).toBe(20_000);
    expect(delays).toEqual([]);
    expect(api.seen.length - before).toBe(1);
  });
});
