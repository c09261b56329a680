import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APIConnectionError, APITimeoutError, APIUserAbortError } from '../src/errors.js';
import { attemptsOf, createTransport, type TransportOptions } from '../src/transport.js';
import { json, recordingSleep, startServer, type TestServer } from './support/server.js';

// Each path answers from a script: the n-th request to it gets script[n] (the last one repeats).
const scripts: Record<string, { status: number; headers?: Record<string, string> }[]> = {
  '/flaky': [{ status: 503 }, { status: 502 }, { status: 200 }],
  '/always-500': [{ status: 500 }],
  '/timeout-408': [{ status: 408 }, { status: 200 }],
  '/limited': [{ status: 429, headers: { 'retry-after-ms': '1234', 'retry-after': '9' } }, { status: 200 }],
  '/limited-seconds': [{ status: 429, headers: { 'retry-after': '2' } }, { status: 200 }],
  '/limited-60': [{ status: 503, headers: { 'retry-after': '60' } }, { status: 200 }],
  '/limited-60-again': [{ status: 503, headers: { 'retry-after': '60' } }, { status: 200 }],
  '/limited-long': [{ status: 429, headers: { 'retry-after': '120' } }, { status: 200 }],
  '/create': [{ status: 503 }, { status: 503 }, { status: 201 }],
  '/not-found': [{ status: 404 }],
};
const counts = new Map<string, number>();
let server: TestServer;
let closedUrl: string;

beforeAll(async () => {
  server = await startServer((request, response) => {
    const path = new URL(request.url, 'http://x').pathname;
    if (path === '/hang') return; // never answers
    const script = scripts[path] ?? [{ status: 200 }];
    const n = counts.get(path) ?? 0;
    counts.set(path, n + 1);
    const step = script[Math.min(n, script.length - 1)]!;
    json(response, step.status, { path, n, body: request.body }, step.headers);
  });
  const closed = await startServer(() => {});
  closedUrl = closed.url;
  await closed.close();
});
afterAll(() => server.close());

function transport(overrides: Partial<TransportOptions> = {}) {
  const { delays, sleep } = recordingSleep();
  const send = createTransport({
    fetch: (url, init) => fetch(url, init),
    timeoutMs: 5_000,
    maxRetries: 2,
    now: Date.now,
    sleep,
    random: () => 0.5,
    ...overrides,
  });
  return { send, delays };
}
const hits = (path: string) => server.seen.filter((seen) => seen.url === path).length;

describe('transport retries', () => {
  it('retries a GET on 5xx with full-jitter backoff under a 0.5 s doubling bound and returns the success', async () => {
    const { send, delays } = transport();
    const response = await send(new Request(`${server.url}/flaky`));
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ n: 2 });
    expect(delays).toEqual([250, 500]);
    expect(attemptsOf(response).attempts).toBe(3);
  });

  it('applies the jitter to the backoff', async () => {
    const { send, delays } = transport({ random: () => 0.999 });
    await send(new Request(`${server.url}/always-500`));
    expect(delays).toEqual([499, 999]);
  });

  it('gives up after maxRetries and returns the last error answer', async () => {
    const before = hits('/always-500');
    const { send, delays } = transport({ maxRetries: 1 });
    const response = await send(new Request(`${server.url}/always-500`));
    expect(response.status).toBe(500);
    expect(hits('/always-500') - before).toBe(2);
    expect(delays).toEqual([250]);
    expect(attemptsOf(response).attempts).toBe(2);
  });

  it('retries 408 and honours retry-after-ms over Retry-After, and Retry-After in seconds', async () => {
    const a = transport();
    expect((await a.send(new Request(`${server.url}/timeout-408`))).status).toBe(200);
    expect(a.delays).toEqual([250]);
    const b = transport();
    expect((await b.send(new Request(`${server.url}/limited`))).status).toBe(200);
    expect(b.delays).toEqual([1234]);
    const c = transport();
    expect((await c.send(new Request(`${server.url}/limited-seconds`))).status).toBe(200);
    expect(c.delays).toEqual([2000]);
  });

  it('waits out a Retry-After of exactly 60 s, on a 503 too, when the deadline leaves time for it', async () => {
    const { send, delays } = transport({ timeoutMs: 120_000 });
    expect((await send(new Request(`${server.url}/limited-60`))).status).toBe(200);
    expect(delays).toEqual([60_000]);
  });

  it('fails fast when the Retry-After is longer than what is left of the deadline', async () => {
    const { send, delays } = transport({ timeoutMs: 5_000 });
    const response = await send(new Request(`${server.url}/limited-60-again`));
    expect(response.status).toBe(503);
    expect(delays).toEqual([]);
    expect(attemptsOf(response)).toMatchObject({ attempts: 1, retryAfterMs: 60_000 });
  });

  it('does not wait out a Retry-After over 60 s: returns the 429 with the wait asked', async () => {
    const { send, delays } = transport();
    const response = await send(new Request(`${server.url}/limited-long`));
    expect(response.status).toBe(429);
    expect(delays).toEqual([]);
    expect(attemptsOf(response)).toEqual({ attempts: 1, retryAfterMs: 120_000, token: undefined });
  });

  it('never retries a POST unless the call opts in, and then sends the same body again', async () => {
    const { send, delays } = transport();
    const first = await send(new Request(`${server.url}/create`, { method: 'POST', body: '{"amount":1}' }));
    expect(first.status).toBe(503);
    expect(delays).toEqual([]);
    const second = await send(new Request(`${server.url}/create`, { method: 'POST', body: '{"amount":2}' }), {
      maxRetries: 1,
    });
    expect(second.status).toBe(201);
    const bodies = server.seen.filter((seen) => seen.url === '/create').map((seen) => seen.body);
    expect(bodies).toEqual(['{"amount":1}', '{"amount":2}', '{"amount":2}']);
  });

  it('does not retry a 404', async () => {
    const { send, delays } = transport();
    expect((await send(new Request(`${server.url}/not-found`))).status).toBe(404);
    expect(delays).toEqual([]);
  });
});

describe('transport failures', () => {
  it('retries connection errors, then throws APIConnectionError naming the origin', async () => {
    const { send, delays } = transport();
    const error = await send(new Request(`${closedUrl}/v3/x`)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIConnectionError);
    expect(delays).toEqual([250, 500]);
    expect((error as APIConnectionError).attempts).toBe(3);
    expect((error as Error).message).toMatch(
      new RegExp(
        `^Could not reach the partner API at ${new URL(closedUrl).host} for GET /v3/x \\(ECONNREFUSED: .*; 3 attempts\\)\\. Check baseUrl \\(PARTNER_BASE_URL\\) and the network\\.$`,
      ),
    );
    expect((error as Error).cause).toBeInstanceOf(TypeError);
  });

  it('bounds the whole call by timeoutMs: a hanging attempt leaves no time for a retry', async () => {
    const before = hits('/hang');
    const { send } = transport({ timeoutMs: 100, maxRetries: 1 });
    const error = await send(new Request(`${server.url}/hang`)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APITimeoutError);
    expect((error as Error).message).toBe(
      'The partner API did not answer GET /hang within 100 ms (timeoutMs bounds the whole call: token, attempts, waits and body). Raise timeoutMs or retry later.',
    );
    expect(hits('/hang') - before).toBe(1);
  });

  it('a per-call timeoutMs overrides the client one', async () => {
    const { send } = transport({ timeoutMs: 60_000 });
    const error = await send(new Request(`${server.url}/hang`), { timeoutMs: 50, maxRetries: 0 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(APITimeoutError);
  });

  it('tells the caller’s abort apart from a timeout and does not retry it', async () => {
    const before = hits('/hang');
    const controller = new AbortController();
    const { send } = transport();
    const pending = send(new Request(`${server.url}/hang`), { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('user gave up')), 50);
    const error = await pending.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIUserAbortError);
    expect((error as Error).message).toBe('The request was aborted by the caller’s AbortSignal.');
    expect((error as Error).cause).toEqual(new Error('user gave up'));
    expect(hits('/hang') - before).toBe(1);
  });

  it('sends nothing once the signal has fired, and stops during the backoff wait', async () => {
    const before = hits('/flaky');
    const controller = new AbortController();
    controller.abort();
    const { send } = transport();
    await expect(
      send(new Request(`${server.url}/flaky`), { signal: controller.signal }),
    ).rejects.toBeInstanceOf(APIUserAbortError);
    expect(hits('/flaky')).toBe(before);

    const during = new AbortController();
    const aborting = createTransport({
      fetch: async (url, init) => {
        const response = await fetch(url, init);
        during.abort();
        return response;
      },
      timeoutMs: 5_000,
      maxRetries: 2,
      now: Date.now,
      sleep: recordingSleep().sleep,
      random: () => 0,
    });
    await expect(
      aborting(new Request(`${server.url}/always-500`), { signal: during.signal }),
    ).rejects.toBeInstanceOf(APIUserAbortError);
  });

  it('lets errors of the auth layer through untouched and unretried', async () => {
    class ScopeProblem extends Error {
      code = 'ERR_SCOPE_NOT_GRANTED';
    }
    let calls = 0;
    const send = createTransport({
      fetch: async () => {
        calls++;
        throw new ScopeProblem('no scope');
      },
      timeoutMs: 5_000,
      maxRetries: 2,
      now: Date.now,
      sleep: recordingSleep().sleep,
      random: () => 0,
    });
    await expect(send(new Request(`${server.url}/flaky`))).rejects.toBeInstanceOf(ScopeProblem);
    expect(calls).toBe(1);
  });
});
