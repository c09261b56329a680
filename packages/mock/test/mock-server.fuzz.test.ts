import { Agent, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Profile, type RunningMock, startMock } from '../src/index.js';
import { forge, sharedSigningKey, tokenFor } from './helpers.js';

// Fuzzing both servers of both profiles with generated hostile requests. The generator runs with a
// fixed fast-check run number (printed with any failure; MOCK_FUZZ_REPLAY overrides it), so a failure
// replays exactly.
const seed = Number(process.env.MOCK_FUZZ_REPLAY ?? 20261122);
const httpRuns = 9_600;
const rawRuns = 600;

interface Target {
  mock: RunningMock;
  profile: Profile;
  tokens: { own: string; second: string };
}
const targets: Target[] = [];
const agent = new Agent({ keepAlive: true, maxSockets: 24 });

beforeAll(async () => {
  for (const profile of ['deployed', 'rfc9068'] as const) {
    const mock = await startMock({
      signingKey: await sharedSigningKey(),
      profile,
      requestTimeoutMs: 2_000,
      maxStoredBytes: 8 * 1024 * 1024,
    });
    targets.push({
      mock,
      profile,
      tokens: { own: await tokenFor(mock), second: await tokenFor(mock, mock.clients[1]!) },
    });
  }
});
afterAll(async () => {
  agent.destroy();
  await Promise.all(targets.map((target) => target.mock.close()));
});

// What a generated request is made of. Credentials are described by kind, so that a failure message
// never prints a token or a secret.
type Auth =
  | { kind: 'none' }
  | { kind: 'own' | 'second' | 'other-profile' | 'truncated' | 'extended' }
  | { kind: 'header'; value: string; label: string };
type Body = { kind: string; bytes: Buffer } | undefined;
interface Generated {
  target: number;
  server: 'auth' | 'api';
  method: string;
  path: string;
  query: string;
  auth: Auth;
  contentType: string | undefined;
  extraHeaders: [string, string][];
  body: Body;
}

const headerSafe = (value: string) => value.replace(/[^\t\x20-\x7e]/g, '');
const deep = (depth: number, open = '[', close = ']') => `${open.repeat(depth)}${close.repeat(depth)}`;

const segment = fc.oneof(
  fc.string({ maxLength: 12 }).map(encodeURIComponent),
  fc.constantFrom('%', '%zz', '%00', '%C0%AF', '%FF', '..', '.', '%2F', '', 'loans', 'v3', 'partner'),
  fc.constantFrom('loan_draft', 'journals', 'repayments', 'oauth', 'token', '.well-known', 'jwks.json'),
);
const pathArb = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('loans', 'loan_draft', 'journals', 'repayments') },
  { weight: 2, arbitrary: fc.constantFrom('/oauth/token', '/.well-known/jwks.json', '/', '*') },
  { weight: 3, arbitrary: fc.array(segment, { maxLength: 7 }).map((parts) => `/${parts.join('/')}`) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 6_000 }).map((length) => `/${'a/'.repeat(length / 2)}`) },
);
const absurd = fc.oneof(
  fc.constantFrom(
    '-1',
    '0',
    '1.5',
    '1e3',
    '1e309',
    '99999999999999999999',
    '',
    'NaN',
    '0x10',
    '%205',
    '%35',
    '+5',
  ),
  fc.integer().map(String),
  fc.string({ maxLength: 8 }).map(encodeURIComponent),
);
const queryArb = fc
  .array(
    fc.tuple(
      fc.constantFrom('limit', 'offset', 'access_token', 'x', 'limit[]', 'client_secret', '%zz'),
      absurd,
    ),
    { maxLength: 5 },
  )
  .map((pairs) => pairs.map(([name, value]) => `${name}=${value}`).join('&'));

const forgedHeader = fc
  .record({
    alg: fc.constantFrom('none', 'NONE', 'RS256', 'HS256', 'ES256', 'RS512', '', 'PS256'),
    kid: fc.option(fc.string({ maxLength: 10 }), { nil: undefined }),
    typ: fc.constantFrom('JWT', 'at+jwt', 'x', undefined),
    jku: fc.option(fc.constant('https://attacker.invalid/jwks'), { nil: undefined }),
    jwk: fc.option(fc.constant({ kty: 'RSA', n: 'AQAB', e: 'AQAB' }), { nil: undefined }),
    crit: fc.option(fc.constant(['exp']), { nil: undefined }),
  })
  .map((header) => JSON.parse(JSON.stringify(header)) as Record<string, unknown>);
const claimsArb = fc.dictionary(
  fc.constantFrom('iss', 'aud', 'exp', 'nbf', 'iat', 'scope', 'partnerId', 'client_id', 'sub'),
  fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constant(deep(200, '{"a":', '}'))),
);
const authArb: fc.Arbitrary<Auth> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom<Auth>({ kind: 'none' }, { kind: 'own' }, { kind: 'second' }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom<Auth>({ kind: 'other-profile' }, { kind: 'truncated' }, { kind: 'extended' }),
  },
  {
    weight: 3,
    arbitrary: fc
      .tuple(
        fc.constantFrom('Bearer', 'bearer', 'Basic', 'Token', 'DPoP', ''),
        forgedHeader,
        claimsArb,
        fc.string(),
      )
      .map(([scheme, header, claims, signature]) => ({
        kind: 'header' as const,
        value: `${scheme} ${forge(header, claims, Buffer.from(signature).toString('base64url'))}`,
        label: `${scheme || '(no scheme)'} forged JWS`,
      })),
  },
  {
    weight: 2,
    arbitrary: fc
      .oneof(
        fc.string({ maxLength: 200 }),
        fc.string({ maxLength: 60 }).map((tail) => `Bearer ${tail}`),
        fc.string({ maxLength: 60 }).map((tail) => `Basic ${tail}`),
        fc.string({ maxLength: 60 }).map((pair) => `Basic ${Buffer.from(pair).toString('base64')}`),
        fc.integer({ min: 1, max: 12_000 }).map((length) => `Bearer ${'a'.repeat(length)}`),
        fc.constantFrom(
          'Bearer',
          'Bearer ',
          'Basic',
          'Basic ====',
          'Bearer a.b.c',
          'Bearer ...',
          'Bearer ==',
        ),
      )
      .map((value) => ({ kind: 'header' as const, value: headerSafe(value), label: 'junk' })),
  },
);
const bodyArb: fc.Arbitrary<Body> = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  {
    weight: 3,
    arbitrary: fc.jsonValue({ maxDepth: 4 }).map((value) => ({
      kind: 'json',
      bytes: Buffer.from(JSON.stringify(value) ?? ''),
    })),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.integer({ min: 30, max: 6_000 }), fc.constantFrom('[', '{"a":'))
      .map(([depth, open]) => ({
        kind: `deep ${depth}`,
        bytes: Buffer.from(
          `{"x":${deep(depth, open, open === '[' ? ']' : '}')}}`.replace('{"a":}', '{"a":1}'),
        ),
      })),
  },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 1, max: 300 }).map((kib) => ({
      kind: `large ${kib} KiB`,
      bytes: Buffer.from(JSON.stringify({ pad: 'x'.repeat(kib * 1024) })),
    })),
  },
  {
    weight: 2,
    arbitrary: fc
      .uint8Array({ maxLength: 200 })
      .map((bytes) => ({ kind: 'bytes', bytes: Buffer.from(bytes) })),
  },
  {
    weight: 3,
    arbitrary: fc
      .array(
        fc.tuple(
          fc.constantFrom(
            'grant_type',
            'client_id',
            'client_secret',
            'scope',
            'audience',
            'access_token',
            'x',
          ),
          fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('client_credentials', 'read:loans', '%zz')),
        ),
        { maxLength: 6 },
      )
      .map((pairs) => ({
        kind: 'form',
        bytes: Buffer.from(pairs.map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&')),
      })),
  },
);
const hostileArb: fc.Arbitrary<Generated> = fc.record({
  target: fc.integer({ min: 0, max: 1 }),
  server: fc.constantFrom('auth', 'api'),
  method: fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS') },
    { weight: 1, arbitrary: fc.stringMatching(/^[A-Z][A-Z_-]{0,9}$/) },
  ),
  path: pathArb,
  query: queryArb,
  auth: authArb,
  contentType: fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'application/x-www-form-urlencoded',
    'APPLICATION/JSON',
    'text/plain',
    'multipart/form-data; boundary=x',
    undefined,
  ),
  extraHeaders: fc.array(
    fc.tuple(
      fc.constantFrom('x-junk', 'accept', 'accept-encoding', 'x-forwarded-for', 'cookie', 'expect-not'),
      fc.oneof(
        fc.string({ maxLength: 40 }).map(headerSafe),
        fc.integer({ min: 1, max: 20_000 }).map((length) => 'v'.repeat(length)),
      ),
    ),
    { maxLength: 3 },
  ),
  body: bodyArb,
});

// Near-valid requests: right server, method, path, credentials and media type, with hostile queries,
// bodies and headers, so that the fuzzing reaches paging, body parsing, storing and token issuing.
const nearValidArb: fc.Arbitrary<Generated> = fc
  .record({
    target: fc.integer({ min: 0, max: 1 }),
    operation: fc.constantFrom<[string, string, string][]>(
      ['api', 'GET', 'loans'],
      ['api', 'POST', 'loan_draft'],
      ['api', 'POST', 'journals'],
      ['api', 'POST', 'repayments'],
      ['auth', 'POST', '/oauth/token'],
      ['auth', 'GET', '/.well-known/jwks.json'],
    ),
    query: fc.oneof(fc.constant(''), queryArb),
    auth: fc.constantFrom<Auth>({ kind: 'own' }, { kind: 'own' }, { kind: 'second' }),
    body: fc.oneof(
      {
        weight: 2,
        arbitrary: fc
          .dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }))
          .map((value) => ({ kind: 'json object', bytes: Buffer.from(JSON.stringify(value)) })),
      },
      { weight: 2, arbitrary: bodyArb },
      {
        weight: 2,
        arbitrary: fc
          .array(
            fc.tuple(
              fc.constantFrom('scope', 'audience', 'grant_type', 'x', 'client_id'),
              fc.oneof(
                fc.string({ maxLength: 20 }),
                fc.constantFrom('read:loans', 'read:loans create:loan_draft', 'client_credentials'),
              ),
            ),
            { maxLength: 2 },
          )
          .map((pairs) => ({
            kind: 'token form',
            bytes: Buffer.from(
              pairs.map(([name, value]) => `&${name}=${encodeURIComponent(value)}`).join(''),
            ),
          })),
      },
    ),
    extraHeaders: fc.array(
      fc.tuple(fc.constantFrom('x-junk', 'accept', 'cookie'), fc.string({ maxLength: 40 }).map(headerSafe)),
      { maxLength: 2 },
    ),
  })
  .map(({ target, operation: [server, method, path], query, auth, body, extraHeaders }) => ({
    target,
    server: server as 'auth' | 'api',
    method,
    path,
    query,
    auth: server === 'auth' ? { kind: 'none' as const } : auth,
    contentType: server === 'auth' ? 'application/x-www-form-urlencoded' : 'application/json',
    extraHeaders,
    body: method === 'GET' ? undefined : body,
  }));

const requestArb = fc.oneof({ weight: 3, arbitrary: hostileArb }, { weight: 2, arbitrary: nearValidArb });

/** A token-form body gets the target's real client credentials in front of its generated fields. */
function bodyOf(generated: Generated): Buffer | undefined {
  const { body } = generated;
  if (body?.kind !== 'token form') return body?.bytes;
  const { mock } = targets[generated.target]!;
  const client = mock.clients[0]!;
  const fields = new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: client.clientId,
    client_secret: client.clientSecret,
  });
  return Buffer.concat([Buffer.from(fields.toString()), body.bytes]);
}

function credentialsOf(generated: Generated): string | undefined {
  const { auth } = generated;
  const { tokens } = targets[generated.target]!;
  const other = targets[1 - generated.target]!.tokens.own;
  switch (auth.kind) {
    case 'none':
      return undefined;
    case 'own':
      return `Bearer ${tokens.own}`;
    case 'second':
      return `Bearer ${tokens.second}`;
    case 'other-profile':
      return `Bearer ${other}`;
    case 'truncated':
      return `Bearer ${tokens.own.slice(0, -5)}`;
    case 'extended':
      return `Bearer ${tokens.own}.x`;
    case 'header':
      return auth.value;
  }
}

function pathOf(generated: Generated): string {
  const { mock } = targets[generated.target]!;
  const partnerId = mock.clients[0]!.partnerId;
  const base =
    generated.path.startsWith('/') || generated.path === '*'
      ? generated.path
      : `/v3/partner/${partnerId}/${generated.path}`;
  return generated.query ? `${base}?${generated.query}` : base;
}

/** One line saying what was sent, without any credential. */
function describeRequest(generated: Generated, index: number): string {
  const auth =
    generated.auth.kind === 'header'
      ? `${generated.auth.label} (${generated.auth.value.length} chars)`
      : generated.auth.kind;
  const body = generated.body ? `${generated.body.kind}, ${generated.body.bytes.length} bytes` : 'none';
  return `#${index} ${targets[generated.target]!.profile} ${generated.server} ${generated.method} ${pathOf(generated).slice(0, 100)} auth=${auth} content-type=${generated.contentType} body=${body}`;
}

function send(generated: Generated): Promise<number> {
  const { mock } = targets[generated.target]!;
  const origin = new URL(generated.server === 'auth' ? mock.authUrl : mock.baseUrl);
  const headers: Record<string, string> = {};
  for (const [name, value] of generated.extraHeaders) headers[name] = value;
  const authorization = credentialsOf(generated);
  if (authorization !== undefined) headers.authorization = authorization;
  if (generated.contentType !== undefined) headers['content-type'] = generated.contentType;
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: origin.hostname,
        port: origin.port,
        method: generated.method,
        path: pathOf(generated),
        headers,
        agent,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(bodyOf(generated));
  });
}

const rawArb = fc.oneof(
  fc.string({ maxLength: 100 }).map((line) => `${line}\r\n\r\n`),
  fc.uint8Array({ minLength: 1, maxLength: 200 }).map((bytes) => Buffer.from([...bytes, 13, 10, 13, 10])),
  fc
    .tuple(
      fc.constantFrom(
        'Content-Length: 5\r\nContent-Length: 6',
        'Transfer-Encoding: chunked\r\nContent-Length: 3',
        'Content-Length: -1',
        'Content-Length: 99999999999999999999',
        'Transfer-Encoding: gzip, chunked',
        'Authorization: Bearer a\r\nAuthorization: Bearer b',
        'X: a\r\n b',
        'Host: a\r\nHost: b',
      ),
      fc.constantFrom('/oauth/token', '/v3/partner/p/loans'),
    )
    .map(([headers, path]) => `POST ${path} HTTP/1.1\r\nHost: x\r\n${headers}\r\n\r\nabc\r\n`),
  fc.string({ maxLength: 30 }).map((target) => `GET ${target} HTTP/1.1\r\nHost: x\r\n\r\n`),
  fc.constantFrom(
    'GET / HTTP/9.9\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: x\r\n\r\n',
    'GET /\r\n\r\n',
    '\r\n\r\n',
    `GET / HTTP/1.1\r\n${'X: y\r\n'.repeat(3000)}\r\n`,
  ),
);

/** Sends raw bytes; resolves the status line, or '' when the server closed without one. */
function sendRaw(port: number, bytes: string | Buffer): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(data.split('\r\n')[0] ?? '');
    };
    // A server still waiting for the rest of a request is fine (its timeouts are tested elsewhere).
    const timer = setTimeout(done, 300);
    socket.setEncoding('latin1');
    socket.on('connect', () => socket.write(bytes));
    socket.on('data', (chunk: string) => {
      data += chunk;
      if (data.includes('\r\n')) done();
    });
    socket.on('error', done);
    socket.on('close', done);
  });
}

async function inBatches<T, R>(
  items: T[],
  size: number,
  run: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = [];
  for (let start = 0; start < items.length; start += size) {
    out.push(
      ...(await Promise.all(
        items.slice(start, start + size).map((item, offset) => run(item, start + offset)),
      )),
    );
  }
  return out;
}

async function stillServes(): Promise<number[]> {
  const statuses: number[] = [];
  for (const { mock } of targets) {
    const token = await tokenFor(mock);
    const response = await fetch(`${mock.baseUrl}/v3/partner/${mock.clients[0]!.partnerId}/loans`, {
      headers: { authorization: `Bearer ${token}` },
    });
    await response.arrayBuffer();
    statuses.push(response.status);
  }
  return statuses;
}

describe('mock-server: fuzzing both servers and both profiles', () => {
  it(`answers ${httpRuns + rawRuns} generated hostile requests without a 5xx, keeps serving, and keeps its memory (fast-check run ${seed})`, async () => {
    const generated = fc.sample(requestArb, { seed, numRuns: httpRuns });
    const raws = fc.sample(fc.tuple(fc.integer({ min: 0, max: 3 }), rawArb), {
      seed: seed + 1,
      numRuns: rawRuns,
    });
    // The generator really is hostile: most requests must be refused, some accepted.
    const rssBefore = process.memoryUsage().rss;
    const errors: string[] = [];
    const statuses = await inBatches(generated, 48, (item) =>
      send(item).catch((error: Error) => {
        errors.push(`${(error as NodeJS.ErrnoException).code} ${error.message}`);
        return -1;
      }),
    );
    const failures = statuses.flatMap((status, index) =>
      status >= 500 || status < 100
        ? [`${describeRequest(generated[index]!, index)} → ${status < 0 ? 'connection error' : status}`]
        : [],
    );
    const rawLines = await inBatches(raws, 100, ([which, bytes]) => {
      const { mock } = targets[which % 2]!;
      return sendRaw(Number(new URL(which < 2 ? mock.authUrl : mock.baseUrl).port), bytes);
    });
    const rawFailures = rawLines.flatMap((line, index) =>
      line === '' || /^HTTP\/1\.1 [1-4]\d\d /.test(line) ? [] : [`raw #${index}: ${line.slice(0, 60)}`],
    );
    const rssGrowth = process.memoryUsage().rss - rssBefore;
    expect(
      [...failures, ...rawFailures].slice(0, 10),
      `replay with MOCK_FUZZ_REPLAY=${seed}; ${failures.length + rawFailures.length} failures`,
    ).toEqual([]);
    const counts = {
      ok: statuses.filter((status) => status < 300).length,
      refused: statuses.filter((status) => status >= 400).length,
    };
    expect(counts.ok).toBeGreaterThan(200);
    expect(counts.refused).toBeGreaterThan(httpRuns / 2);
    // Every kind of answer is reached (with this run: 200, 201, 400, 401, 403, 404, 405 and 431).
    for (const status of [200, 201, 400, 401, 403, 404, 405, 431]) expect(statuses).toContain(status);
    expect(errors).toEqual([]);
    expect(await stillServes()).toEqual([200, 200]);
    expect(targets.map((target) => target.mock.internalErrorCount())).toEqual([0, 0]);
    expect(rssGrowth, `RSS grew by ${(rssGrowth / 1048576).toFixed(0)} MiB`).toBeLessThan(200 * 1024 * 1024);
  }, 120_000);

  it('answers slowloris connections 408 at the headers timeout and closes them, while serving others', async () => {
    const mock = await startMock({
      signingKey: await sharedSigningKey(),
      requestTimeoutMs: 1_000,
      headersTimeoutMs: 500,
    });
    try {
      const port = Number(new URL(mock.baseUrl).port);
      // 100 connections read what the server sends; 100 never read (and so never see its FIN).
      const sockets = Array.from({ length: 200 }, () => connect(port, '127.0.0.1'));
      const started = Date.now();
      const firstLines = sockets.slice(0, 100).map(
        (socket) =>
          new Promise<string>((resolve) => {
            let data = '';
            socket.setEncoding('latin1');
            socket.on('data', (chunk: string) => {
              data += chunk;
            });
            socket.on('close', () => resolve(data.split('\r\n')[0] ?? ''));
          }),
      );
      const closed = sockets.map(
        (socket) =>
          new Promise<number>((resolve) => {
            socket.on('error', () => undefined);
            socket.on('close', () => resolve(Date.now() - started));
          }),
      );
      // Each connection sends the start of a request, then one more header byte every 100 ms.
      for (const socket of sockets) socket.write('GET /v3/partner/p/loans HTTP/1.1\r\nHost: x\r\nX-Slow: ');
      const drip = setInterval(() => {
        for (const socket of sockets) if (!socket.destroyed) socket.write('a');
      }, 100);
      try {
        const token = await tokenFor(mock);
        const served = await fetch(`${mock.baseUrl}/v3/partner/${mock.clients[0]!.partnerId}/loans`, {
          headers: { authorization: `Bearer ${token}` },
        });
        expect(served.status).toBe(200);
        // 408 after the 500 ms headers timeout (checked every 250 ms at most), closed by the server at
        // most 1 s later even for the clients that never read; 6 s bounds the test.
        const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 6_000));
        const times = await Promise.race([Promise.all(closed), timeout]);
        expect(times).not.toBe('timeout');
        expect(Math.min(...(times as number[]))).toBeGreaterThanOrEqual(400);
        expect(new Set(await Promise.all(firstLines))).toEqual(new Set(['HTTP/1.1 408 Request Timeout']));
      } finally {
        clearInterval(drip);
        for (const socket of sockets) socket.destroy();
      }
    } finally {
      await mock.close();
    }
  }, 20_000);
});
