import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mediaTypeOf } from '../../../src/common/media-type.js';
import { ConformanceError } from '../../../src/errors.js';
import { type Exchange, errorCodeOf, HttpProbe, jsonObject } from '../../../src/server/http/probe.js';
import { closedPortUrl, json, startServer, type TestServer } from '../../helpers.js';

let server: TestServer;
beforeAll(async () => {
  server = await startServer((req, res, body) => {
    if (req.url === '/redirect') {
      res.writeHead(302, { location: '/elsewhere' });
      return void res.end();
    }
    if (req.url === '/slow') return void setTimeout(() => res.end('late'), 2_000);
    if (req.url === '/large') return void res.end(`\uFEFF${'a'.repeat(5000)}`);
    json(res, 400, {
      error: 'invalid_request',
      method: req.method,
      type: req.headers['content-type'],
      accept: req.headers.accept,
      body,
    });
  });
});
afterAll(() => server.close());

describe('HttpProbe', () => {
  it('sends a form body and reports the exchange with its JSON', async () => {
    const seen: Exchange[] = [];
    const probe = new HttpProbe({ onExchange: (e) => seen.push(e) });
    const exchange = await probe.send({
      method: 'POST',
      url: `${server.url}/x`,
      form: [
        ['a', '1 2'],
        ['b', 'é'],
      ],
    });
    expect(exchange.status).toBe(400);
    expect(mediaTypeOf(exchange.headers)).toBe('application/json');
    expect(errorCodeOf(exchange)).toBe('invalid_request');
    expect(jsonObject(exchange)).toMatchObject({
      method: 'POST',
      type: 'application/x-www-form-urlencoded',
      accept: 'application/json',
      body: 'a=1+2&b=%C3%A9',
    });
    expect(seen).toEqual([exchange]);
  });

  it('reads an answer up to maxBodyBytes and says where it was cut (control: a larger bound reads it whole)', async () => {
    const cut = await new HttpProbe({ maxBodyBytes: 1000 }).send({
      method: 'GET',
      url: `${server.url}/large`,
    });
    // The byte order mark (3 bytes) counts towards the bound and is dropped from the text.
    expect(cut.text).toBe('a'.repeat(997));
    expect(cut.truncatedAt).toBeGreaterThan(1000);
    const whole = await new HttpProbe({ maxBodyBytes: 5003 }).send({
      method: 'GET',
      url: `${server.url}/large`,
    });
    expect(whole.text).toBe('a'.repeat(5000));
    expect(whole.truncatedAt).toBeUndefined();
  });

  it('does not follow redirects: a 3xx is an answer to judge', async () => {
    const exchange = await new HttpProbe().send({ method: 'GET', url: `${server.url}/redirect` });
    expect(exchange.status).toBe(302);
    expect(exchange.headers.get('location')).toBe('/elsewhere');
  });

  it('uses the injected fetch', async () => {
    const calls: string[] = [];
    const probe = new HttpProbe({
      fetch: async (input) => {
        calls.push(String(input));
        return new Response('{"ok":true}', { status: 201 });
      },
    });
    expect((await probe.send({ method: 'GET', url: 'http://example.invalid/x' })).json).toEqual({ ok: true });
    expect(calls).toEqual(['http://example.invalid/x']);
  });

  it('retries a 429 after Retry-After and reports only the last answer', async () => {
    const statuses = [429, 429, 200];
    const slept: number[] = [];
    const seen: number[] = [];
    const probe = new HttpProbe({
      fetch: async () => new Response('{}', { status: statuses.shift()!, headers: { 'retry-after': '2' } }),
      sleep: async (ms) => {
        slept.push(ms);
      },
      onExchange: (e) => seen.push(e.status),
    });
    expect((await probe.send({ method: 'GET', url: 'http://example.invalid/' })).status).toBe(200);
    expect(slept).toEqual([2000, 2000]);
    expect(seen).toEqual([200]);
  });

  it('throws ERR_NETWORK with the cause code when nothing listens', async () => {
    const url = await closedPortUrl();
    const error = await new HttpProbe().send({ method: 'GET', url }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConformanceError);
    expect((error as ConformanceError).code).toBe('ERR_NETWORK');
    expect((error as ConformanceError).message).toMatch(
      /^GET http:\/\/127\.0\.0\.1:\d+ failed: .*\(ECONNREFUSED\)$/,
    );
  });

  it('times out a request after requestTimeoutMs', async () => {
    const error = await new HttpProbe({ requestTimeoutMs: 100 })
      .send({ method: 'GET', url: `${server.url}/slow` })
      .catch((e: unknown) => e);
    expect((error as ConformanceError).message).toMatch(/failed: the request timed out$/);
  });
});
