import { connect } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningMock, startMock } from '../src/index.js';
import { closeServer, createMockServer, listen } from '../src/mock-server.js';
import { RequestLog } from '../src/request-log.js';
import { forge, sharedSigningKey, tokenFor } from './helpers.js';
import { takeInternalErrors } from './setup.js';

let mock: RunningMock;
let token: string;
beforeAll(async () => {
  mock = await startMock({ signingKey: await sharedSigningKey(), requestTimeoutMs: 500 });
  token = await tokenFor(mock);
});
afterAll(() => mock.close());

/** Sends raw bytes and answers the status line (or '' when the server closed without one). */
function raw(port: number, bytes: string | Buffer, waitMs = 2000): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(data.split('\r\n')[0] ?? '');
    }, waitMs);
    socket.on('connect', () => socket.write(bytes));
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      data += chunk;
      if (data.includes('\r\n')) socket.destroy();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(data.split('\r\n')[0] ?? '');
    });
  });
}

const port = (url: string) => Number(new URL(url).port);
const headerSafe = (value: string) => /^[\x21-\x7e]([\x20-\x7e\t]*[\x21-\x7e])?$/.test(value) || value === '';
const partnerPath = () => `/v3/partner/${mock.clients[0]!.partnerId}`;
const tails = ['loans', 'loan_draft', 'journals', 'repayments'] as const;

// Header values a fuzzer should try: free text, Bearer + junk, and JWS-shaped tokens with random parts.
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value) ?? 'null').toString('base64url');
const jsonish = fc.oneof(
  fc.jsonValue({ maxDepth: 1 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 })),
);
const headerArb = fc
  .oneof(
    fc.string({ maxLength: 80 }),
    fc.string({ maxLength: 60 }).map((tail) => `Bearer ${tail}`),
    fc
      .tuple(
        fc.constantFrom('Bearer', 'bearer', 'Basic', 'Token', 'Bearer  ', ''),
        jsonish,
        jsonish,
        fc.string({ maxLength: 20 }),
      )
      .map(
        ([scheme, header, payload, signature]) =>
          `${scheme} ${b64(header)}.${b64(payload)}.${Buffer.from(signature).toString('base64url')}`,
      ),
    fc
      .record({
        alg: fc.constantFrom('none', 'NONE', 'RS256', 'HS256', 'ES256', 'RS512', ''),
        kid: fc.oneof(fc.string({ maxLength: 10 }), fc.constant(undefined)),
        jku: fc.oneof(
          fc.string({ maxLength: 8 }).map((host) => `https://${host}.invalid/jwks`),
          fc.constant(undefined),
        ),
        crit: fc.oneof(fc.array(fc.string({ maxLength: 5 }), { maxLength: 2 }), fc.constant(undefined)),
      })
      .map((header) => `Bearer ${forge(header, { exp: 'x', aud: 7, scope: { a: 1 } }, 'AAAA')}`),
    fc.integer({ min: 1, max: 40 }).map((cut) => `Bearer ${token.slice(0, -cut)}`),
    fc.string({ maxLength: 5 }).map((junk) => `Bearer ${token}${junk}`),
  )
  .filter(headerSafe);

describe('mock-server: robustness (property-based)', () => {
  it('answers malformed Authorization headers with 4xx, never 5xx', async () => {
    // One request per run, on a path chosen by the fuzzer (the header rules are the same on all
    // four; GET and POST differ in whether a body follows).
    await fc.assert(
      fc.asyncProperty(headerArb, fc.constantFrom(...tails), async (authorization, tail) => {
        const response = await fetch(`${mock.baseUrl}${partnerPath()}/${tail}`, {
          method: tail === 'loans' ? 'GET' : 'POST',
          headers: { authorization, 'content-type': 'application/json' },
          ...(tail !== 'loans' && { body: '{}' }),
        });
        await response.arrayBuffer();
        expect(response.status).toBeGreaterThanOrEqual(200);
        expect(response.status).toBeLessThan(500);
        if (response.status === 401) expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
      }),
      { numRuns: 400 },
    );
  }, 30_000);

  it('answers malformed paths, methods and queries with 4xx (or 200 when valid), never 5xx', async () => {
    const segment = fc.oneof(
      fc.string({ maxLength: 12 }),
      fc.constantFrom('%', '%zz', '..', '.', '%2F', 'loans', 'v3', 'partner'),
    );
    const query = fc.array(
      fc.tuple(
        fc.constantFrom('limit', 'offset', 'access_token', 'x', 'limit[]'),
        fc.oneof(fc.string({ maxLength: 8 }), fc.integer().map(String), fc.double().map(String)),
      ),
      { maxLength: 4 },
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'),
        fc.oneof(
          fc.constant(`${partnerPath()}/loans`),
          fc.array(segment, { maxLength: 6 }).map((parts) => `/${parts.map(encodeURIComponent).join('/')}`),
          fc.array(segment, { maxLength: 6 }).map((parts) => `/v3/partner/${parts.join('/')}`),
        ),
        query,
        async (method, path, pairs) => {
          const search = pairs.map(([key, value]) => `${key}=${encodeURIComponent(value)}`).join('&');
          const response = await fetch(`${mock.baseUrl}${path}${search ? `?${search}` : ''}`, {
            method,
            headers: { authorization: `Bearer ${token}` },
          });
          await response.arrayBuffer();
          expect(response.status).toBeLessThan(500);
        },
      ),
      { numRuns: 400 },
    );
  }, 30_000);

  it('answers malformed create bodies and token requests with 4xx, never 5xx', async () => {
    const body = fc.oneof(
      fc.string({ maxLength: 60 }),
      fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value) ?? ''),
      fc.uint8Array({ maxLength: 60 }).map((bytes) => Buffer.from(bytes)),
      fc
        .dictionary(
          fc.constantFrom('grant_type', 'client_id', 'client_secret', 'scope', 'audience', 'x'),
          fc.string({ maxLength: 12 }),
        )
        .map((fields) => new URLSearchParams(fields).toString()),
    );
    const contentType = fc.constantFrom(
      'application/json',
      'application/x-www-form-urlencoded',
      'text/plain',
      'application/json; charset=latin1',
      'multipart/form-data; boundary=x',
      '',
    );
    await fc.assert(
      fc.asyncProperty(
        body,
        contentType,
        fc.constantFrom('token', 'loan_draft', 'journals', 'repayments'),
        // The generated header, a valid token, or no header at all.
        fc.oneof(headerArb, fc.constant('valid'), fc.constant(undefined)),
        async (payload, type, target, authorization) => {
          const url = target === 'token' ? mock.tokenUrl : `${mock.baseUrl}${partnerPath()}/${target}`;
          const headers: Record<string, string> = {};
          if (type) headers['content-type'] = type;
          if (authorization !== undefined)
            headers.authorization = authorization === 'valid' ? `Bearer ${token}` : authorization;
          const response = await fetch(url, { method: 'POST', headers, body: payload });
          await response.arrayBuffer();
          expect(response.status).toBeLessThan(500);
        },
      ),
      { numRuns: 400 },
    );
  }, 30_000);

  it('answers garbage on the wire with 4xx or a closed connection, and keeps serving', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ maxLength: 100 }).map((line) => `${line}\r\n\r\n`),
          fc
            .uint8Array({ minLength: 1, maxLength: 100 })
            .map((bytes) => Buffer.from([...bytes, 13, 10, 13, 10])),
          fc.string({ maxLength: 30 }).map((target) => `GET ${target} HTTP/1.1\r\nHost: x\r\n\r\n`),
          fc
            .string({ maxLength: 30 })
            .map(
              (value) =>
                `GET /x HTTP/1.1\r\nHost: x\r\nAuthorization: ${value}\r\nContent-Length: ${value}\r\n\r\n`,
            ),
        ),
        fc.boolean(),
        async (bytes, toAuth) => {
          const status = await raw(port(toAuth ? mock.authUrl : mock.baseUrl), bytes, 1000);
          if (status !== '') expect(status).toMatch(/^HTTP\/1\.1 [1-4]\d\d /);
        },
      ),
      { numRuns: 100 },
    );
    const response = await fetch(`${mock.baseUrl}${partnerPath()}/loans`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(response.status).toBe(200);
  }, 30_000);
});

describe('mock-server: timeouts and protocol errors', () => {
  it('answers 408 to a request whose body never finishes', async () => {
    const status = await raw(
      port(mock.baseUrl),
      `POST ${partnerPath()}/loan_draft HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`,
      5000,
    );
    expect(status).toBe('HTTP/1.1 408 Request Timeout');
  });

  it('answers 408 to headers that never finish', async () => {
    const status = await raw(port(mock.authUrl), 'POST /oauth/token HTTP/1.1\r\nHost: x\r\n', 5000);
    expect(status).toBe('HTTP/1.1 408 Request Timeout');
  });

  it('answers 400 to a malformed request line and 431 to oversized headers', async () => {
    expect(await raw(port(mock.baseUrl), 'NOT HTTP\r\n\r\n')).toBe('HTTP/1.1 400 Bad Request');
    const big = `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`;
    expect(await raw(port(mock.baseUrl), big)).toBe('HTTP/1.1 431 Request Header Fields Too Large');
  });

  it('answers a request target in absolute form with 400', async () => {
    expect(
      await raw(port(mock.baseUrl), `GET http://x${partnerPath()}/loans HTTP/1.1\r\nHost: x\r\n\r\n`),
    ).toMatch(/^HTTP\/1\.1 400 /);
  });
});

describe('mock-server: the last-resort 500', () => {
  it('answers 500 to a handler error, reports it, logs it and tells the test hook', async () => {
    const reported: unknown[] = [];
    const log = new RequestLog();
    const server = createMockServer({
      name: 'api',
      handler: async (req) => {
        if (req.url === '/bug') throw new Error('a handler bug');
        throw new Error('unreachable in this test');
      },
      log,
      clock: () => 0,
      requestTimeoutMs: 1000,
      headersTimeoutMs: 1000,
      caches: true,
      onInternalError: (error) => reported.push(error),
    });
    const port = await listen(server, '127.0.0.1', 0);
    try {
      const response = await fetch(`http://127.0.0.1:${port}/bug`);
      expect(response.status).toBe(500);
      expect(await response.json()).toEqual({ error: 'server_error', error_description: 'internal error' });
      expect(reported.map((error) => (error as Error).message)).toEqual(['a handler bug']);
      expect(log.entries().map((entry) => [entry.status, entry.error])).toEqual([[500, 'server_error']]);
      // The hook of test/setup.ts saw it too (and would fail this test if it were left there).
      expect(takeInternalErrors().map((error) => (error as Error).message)).toEqual(['a handler bug']);
    } finally {
      await closeServer(server);
    }
  });

  it('counts the internal errors of a running mock and hands them to onInternalError', async () => {
    let broken = false;
    const reported: unknown[] = [];
    const running = await startMock({
      signingKey: await sharedSigningKey(),
      clock: () => {
        if (broken) throw new Error('the clock broke');
        return Date.now();
      },
      onInternalError: (error) => reported.push(error),
    });
    try {
      const good = await tokenFor(running);
      broken = true;
      const response = await fetch(`${running.baseUrl}/v3/partner/${running.clients[0]!.partnerId}/loans`, {
        headers: { authorization: `Bearer ${good}` },
      });
      expect(response.status).toBe(500);
      expect(running.internalErrorCount()).toBe(1);
      expect(reported.map((error) => (error as Error).message)).toEqual(['the clock broke']);
      expect(takeInternalErrors()).toHaveLength(1);
      expect(mock.internalErrorCount()).toBe(0);
    } finally {
      await running.close();
    }
  });
});

/** Sends a whole request, half-closes (socket.end()), and answers everything received until close. */
function halfClosed(port: number, request: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    let data = '';
    const timer = setTimeout(() => socket.destroy(), 5000);
    socket.setEncoding('latin1');
    socket.on('connect', () => socket.end(request));
    socket.on('data', (chunk: string) => {
      data += chunk;
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(data);
    });
  });
}

describe('mock-server: half-closed connections', () => {
  it('answers 20 of 20 token requests and loans requests whose client half-closed after sending', async () => {
    const client = mock.clients[0]!;
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: client.clientId,
      client_secret: client.clientSecret,
      audience: mock.audience,
    }).toString();
    const tokenRequest = `POST /oauth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${form.length}\r\n\r\n${form}`;
    const loansRequest = `GET ${partnerPath()}/loans HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`;
    const answers = await Promise.all([
      ...Array.from({ length: 20 }, () => halfClosed(port(mock.authUrl), tokenRequest)),
      ...Array.from({ length: 20 }, () => halfClosed(port(mock.baseUrl), loansRequest)),
    ]);
    const statuses = answers.map((answer) => answer.split('\r\n')[0]);
    expect(statuses).toEqual(Array(40).fill('HTTP/1.1 200 OK'));
    expect(answers.slice(0, 20).every((answer) => answer.includes('"access_token":"ey'))).toBe(true);
  });
});
