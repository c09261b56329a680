import { createServer, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type MockClient, startMock } from '../src/index.js';
import { credentials, tokenRequest } from './helpers.js';
import { type RegisterServer, startRegisterServer } from './support/register-server.js';

// The gate's hold on the register's change notice (GET <register>/changes), against a register server
// on 127.0.0.1 fronted by a small server that plays the notice (answering, hanging or failing) and
// passes every other request through. Real clock, real HTTP: a revocation reaches the gate in under 2 s
// with the notice; without it, or with a notice that hangs or fails, the gate keeps its copy until its
// max-age (here 60 s), as before.

const partner: MockClient = {
  partnerId: 'ptn_quick',
  clientId: 'client-quick',
  clientSecret: 'secret-quick-0123456789',
  authorizedScopes: ['read:loans'],
};

type Mode = 'notice' | 'hang' | 'error';

interface Front {
  url: string;
  mode: Mode;
  /** Polls asked, with their `after`. */
  polls: Array<string | null>;
  /** Polls held open now. */
  held: Set<ServerResponse>;
  /** Answers every held poll `{ changed: true, seq }` (the register changed). */
  announce(seq: number): void;
  close(): Promise<void>;
}

async function startFront(register: RegisterServer, mode: Mode): Promise<Front> {
  const target = new URL(register.registerUrl);
  const held = new Set<ServerResponse>();
  const front: Front = {
    url: '',
    mode,
    polls: [],
    held,
    announce(seq) {
      for (const res of held) res.end(JSON.stringify({ changed: true, seq }));
      held.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://front');
    if (url.pathname === '/register/changes') {
      front.polls.push(url.searchParams.get('after'));
      if (req.headers.authorization !== `Bearer ${register.key}`) return void res.writeHead(401).end();
      if (front.mode === 'error') return void res.writeHead(500).end('no');
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.flushHeaders();
      held.add(res);
      res.on('close', () => held.delete(res));
      return; // 'hang' never answers; 'notice' answers at announce()
    }
    const upstream = request(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  front.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return front;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp(mode: Mode, changes: boolean) {
  const register = await startRegisterServer();
  cleanups.push(() => register.close());
  register.state.partners = [
    {
      partnerId: partner.partnerId,
      name: 'Quick Lending',
      status: 'active',
      scopes: ['read:loans'],
      validUntil: null,
      decisionId: 'dec_approved',
    },
  ];
  const front = await startFront(register, mode);
  cleanups.push(() => front.close());
  const mock = await startMock({
    profile: 'production',
    clients: [partner],
    register: {
      url: `${front.url}/register`,
      key: register.key,
      jwksUrl: register.jwksUrl,
      changes,
    },
  });
  cleanups.push(() => mock.close());
  const token = () => tokenRequest(mock, credentials(mock, partner, { scope: 'read:loans' }));
  return { register, front, mock, token };
}

/** Revokes (or suspends) the partner in the register (the next copy signed says so). */
function revoke(register: RegisterServer, status: 'revoked' | 'suspended' = 'revoked') {
  register.state.partners = register.state.partners.map((entry) => ({
    ...entry,
    status,
    scopes: [],
    decisionId: `dec_${status}`,
    ...(status === 'suspended' && { suspendedAt: '2026-03-01T12:00:00.000Z' }),
  }));
}

const until = async (probe: () => boolean, timeoutMs = 5000) => {
  const deadline = Date.now() + timeoutMs;
  while (!probe() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  return probe();
};

describe('the production gate and the register change notice', () => {
  it('refuses a revoked partner in under 2 s when the notice says the register changed', async () => {
    const { register, front, mock, token } = await setUp('notice', true);
    expect((await token()).status).toBe(200);
    // The first poll says which copy the gate holds (its seq) and is held.
    expect(await until(() => front.held.size === 1)).toBe(true);
    expect(front.polls[0]).toBe(String(mock.registerStatus()?.seq));
    const started = performance.now();
    revoke(register);
    front.announce(register.state.seq);
    let answer = await token();
    while (answer.status === 200 && performance.now() - started < 5000) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      answer = await token();
    }
    const elapsed = performance.now() - started;
    console.log(`register changes (mock): revocation to first refusal ${Math.round(elapsed)} ms`);
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ error: 'unauthorized_client' });
    expect(elapsed).toBeLessThan(2000);
    // The gate polls again, after the seq it was told.
    expect(await until(() => front.held.size === 1)).toBe(true);
    expect(Number(front.polls.at(-1))).toBeGreaterThanOrEqual(register.state.seq - 1);
    expect(mock.registerStatus()?.changes).toMatchObject({ state: 'listening', notices: 1 });
  });

  it('refuses a suspended partner through the notice the same way as a revoked one', async () => {
    const { register, front, mock, token } = await setUp('notice', true);
    expect((await token()).status).toBe(200);
    expect(await until(() => front.held.size === 1)).toBe(true);
    revoke(register, 'suspended');
    // Control: before the notice the gate still holds its copy (max-age 60 s) and issues.
    expect((await token()).status).toBe(200);
    front.announce(register.state.seq);
    let answer = await token();
    const deadline = Date.now() + 5000;
    while (answer.status === 200 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      answer = await token();
    }
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({
      error: 'unauthorized_client',
      error_description: expect.stringContaining(
        'its approval is suspended since 2026-03-01T12:00:00.000Z (decision dec_suspended)',
      ),
    });
    expect(mock.registerStatus()?.changes).toMatchObject({ notices: 1 });
  });

  it('without the notice (changes: false) still serves its copy 2 s after the revocation', async () => {
    const { register, front, token } = await setUp('notice', false);
    expect((await token()).status).toBe(200);
    revoke(register);
    await new Promise((resolve) => setTimeout(resolve, 2100));
    expect((await token()).status).toBe(200);
    expect(front.polls).toEqual([]);
  });

  it('a notice that hangs leaves the gate on its max-age pull, and close ends the poll', async () => {
    const { register, front, mock, token } = await setUp('hang', true);
    expect((await token()).status).toBe(200);
    expect(await until(() => front.held.size === 1)).toBe(true);
    revoke(register);
    await new Promise((resolve) => setTimeout(resolve, 2100));
    // Token requests never wait for the notice, and the copy is kept for its max-age.
    const at = performance.now();
    expect((await token()).status).toBe(200);
    expect(performance.now() - at).toBeLessThan(1000);
    await mock.close();
    expect(await until(() => front.held.size === 0, 2000)).toBe(true);
  });

  it('a notice that fails is retried with a growing pause, the copy kept for its max-age', async () => {
    const { register, front, mock, token } = await setUp('error', true);
    expect((await token()).status).toBe(200);
    revoke(register);
    await new Promise((resolve) => setTimeout(resolve, 3500));
    expect((await token()).status).toBe(200);
    // 1 s, then about 2 s: two or three polls in 3.5 s, not a tight loop.
    expect(front.polls.length).toBeGreaterThanOrEqual(2);
    expect(front.polls.length).toBeLessThanOrEqual(3);
    expect(mock.registerStatus()?.changes).toMatchObject({
      state: 'retrying',
      lastError: 'the change notice answered 500',
    });
  });
});
