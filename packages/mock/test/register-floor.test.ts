import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type MockClient, type RegisterOptions, type RunningMock, startMock } from '../src/index.js';
import { credentials, tokenRequest } from './helpers.js';
import { type RegisterServer, startRegisterServer } from './support/register-server.js';
import { type ReplayProxy, startReplayProxy } from './support/replay-proxy.js';

// The production gate's replay floor, with an attacker's proxy (a real HTTP server on 127.0.0.1)
// between the gate and the register server, capturing genuine registers and replaying them. The gate
// and the register server share one clock the test moves.

const partner: MockClient = {
  partnerId: 'ptn_floor',
  clientId: 'client-floor',
  clientSecret: 'secret-floor-0123456789',
  authorizedScopes: ['read:loans'],
};

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function temporaryDirectory(): string {
  const dir = mkdtempSync(join(tmpdir(), 'partner-mock-floor-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

interface World {
  register: RegisterServer;
  proxy: ReplayProxy;
  clock: { now: number };
  gate(options?: Partial<RegisterOptions>): Promise<RunningMock>;
}

async function world(configure: (register: RegisterServer) => void = () => undefined): Promise<World> {
  // At the start of a second, so that copies signed in the same second share their iat.
  const clock = { now: Math.floor(Date.now() / 1000) * 1000 };
  const register = await startRegisterServer();
  cleanups.push(() => register.close());
  register.state.now = () => clock.now;
  register.state.maxAge = 0;
  register.state.partners = [
    {
      partnerId: partner.partnerId,
      name: 'Floor Lending',
      status: 'active',
      scopes: ['read:loans'],
      validUntil: null,
      decisionId: 'dec_active',
    },
  ];
  configure(register);
  const proxy = await startReplayProxy(register.url);
  cleanups.push(() => proxy.close());
  const gate = async (options: Partial<RegisterOptions> = {}) => {
    const mock = await startMock({
      profile: 'production',
      clients: [partner],
      register: { url: proxy.registerUrl, key: register.key, ...options },
      clock: () => clock.now,
    });
    cleanups.push(() => mock.close());
    return mock;
  };
  return { register, proxy, clock, gate };
}

const ask = (mock: RunningMock) => tokenRequest(mock, credentials(mock, partner));
const revoke = (register: RegisterServer) => {
  register.state.partners[0]!.status = 'revoked';
  register.state.partners[0]!.decisionId = 'dec_revoked';
};

const lastOf = (proxy: ReplayProxy) => proxy.captured.at(-1)!;

describe('the register cannot be rolled back: seq', () => {
  it('refuses a same-iat replay of the approval after the revocation (a lower seq), and goes on deciding on the revocation', async () => {
    const { register, proxy, clock, gate } = await world();
    const mock = await gate();
    expect((await ask(mock)).status).toBe(200);
    const approval = lastOf(proxy);
    revoke(register);
    // The same second: the revocation has the approval's iat, and a higher seq.
    const refused = await ask(mock);
    expect(refused.body.error_description).toContain('its approval was revoked (decision dec_revoked)');
    expect(JSON.parse(Buffer.from(lastOf(proxy).body.split('.')[1]!, 'base64url').toString()).iat).toBe(
      JSON.parse(Buffer.from(approval.body.split('.')[1]!, 'base64url').toString()).iat,
    );
    expect(mock.registerStatus()).toMatchObject({ seq: 2 });
    proxy.replay(approval);
    const replayed = await ask(mock);
    expect(replayed.status).toBe(400);
    expect(replayed.body.error_description).toContain('revoked');
    expect(mock.registerStatus()?.lastError).toBe(
      "the register's seq 1 is lower than 2, the highest this gate has accepted (a replayed or rolled-back copy is refused)",
    );
    clock.now += 1000; // read again a second later: still refused
    expect((await ask(mock)).body.error_description).toContain('revoked');
    expect(mock.registerStatus()).toMatchObject({ seq: 2, lastError: expect.stringContaining('seq 1') });
  });

  it('takes the very same document again (a re-delivery), refuses a different one under the same seq', async () => {
    const { register, proxy, clock, gate } = await world();
    const mock = await gate();
    revoke(register);
    expect((await ask(mock)).body.error_description).toContain('revoked');
    const revocation = lastOf(proxy);
    proxy.replay(revocation);
    clock.now += 1000;
    expect((await ask(mock)).body.error_description).toContain('revoked');
    expect(mock.registerStatus()).toMatchObject({ seq: 2 });
    expect(mock.registerStatus()?.lastError).toBeUndefined();
    // A document signed under seq 2 again, saying active: refused.
    proxy.replay(undefined);
    register.state.seq = 2;
    register.state.partners[0]!.status = 'active';
    clock.now += 1000;
    expect((await ask(mock)).body.error_description).toContain('revoked');
    expect(mock.registerStatus()?.lastError).toBe(
      "the register's seq 2 is that of the copy already accepted, but the document differs (a second copy under one seq is refused)",
    );
  });
});

describe('the register cannot be rolled back: the floor survives a restart (--register-state)', () => {
  it('a restarted gate refuses a copy captured before the revocation, still within its exp; a memory-only gate would take it', async () => {
    const { register, proxy, clock, gate } = await world();
    const file = join(temporaryDirectory(), 'register-state.json');
    const first = await gate({ stateFile: file });
    expect((await ask(first)).status).toBe(200);
    const approval = lastOf(proxy);
    clock.now += 1000; // a second before the revocation
    revoke(register);
    expect((await ask(first)).body.error_description).toContain('revoked');
    expect(first.registerStatus()).toMatchObject({ seq: 2, stateFile: file });
    await first.close();
    const saved = JSON.parse(readFileSync(file, 'utf8'));
    expect(saved.format).toBe('partner-mock-register-state/v1');
    expect(saved.floors[proxy.registerUrl]).toMatchObject({ seq: 2 });
    expect(readdirSync(join(file, '..'))).toEqual(['register-state.json']); // no temporary file left

    proxy.replay(approval);
    clock.now += 5000; // the approval is still within its 300-s exp
    const restarted = await gate({ stateFile: file });
    const answer = await ask(restarted);
    expect(answer.status).toBe(503);
    expect(answer.body.error_description).toContain('seq 1 is lower than 2');
    // Control: without the state file, a restarted gate takes the replayed approval.
    const forgetful = await gate();
    expect((await ask(forgetful)).status).toBe(200);

    // The service reachable again: the restarted gate takes the genuine register at once (seq 3).
    proxy.replay(undefined);
    clock.now += 1000;
    const genuine = await ask(restarted);
    expect(genuine.body.error_description).toContain('its approval was revoked');
    expect(restarted.registerStatus()).toMatchObject({ seq: 3 });
    expect(restarted.registerStatus()?.lastError).toBeUndefined();
    expect(JSON.parse(readFileSync(file, 'utf8')).floors[proxy.registerUrl].seq).toBe(3);
  });

  it('a restarted gate takes the same document it accepted last (the service still serving it)', async () => {
    const { proxy, gate } = await world();
    const file = join(temporaryDirectory(), 'state.json');
    const first = await gate({ stateFile: file });
    await first.close();
    proxy.replay(lastOf(proxy));
    const restarted = await gate({ stateFile: file });
    expect((await ask(restarted)).status).toBe(200);
    expect(restarted.registerStatus()).toMatchObject({ seq: 1 });
  });

  it('refuses to start on a damaged or unreadable state file, naming it and what to do', async () => {
    const { gate } = await world();
    const dir = temporaryDirectory();
    const damaged = join(dir, 'damaged.json');
    writeFileSync(damaged, '{"format":"partner-mock-register-state/v1","floors":{"x":{"seq":-1}}');
    await expect(gate({ stateFile: damaged })).rejects.toMatchObject({
      code: 'ERR_MOCK_REGISTER_STATE',
      message: expect.stringMatching(
        new RegExp(
          `register state file ${damaged} is not valid JSON .*restore it from a backup, or delete it`,
        ),
      ),
    });
    writeFileSync(damaged, '{"format":"partner-mock-register-state/v1","floors":{"x":{"seq":-1}}}');
    await expect(gate({ stateFile: damaged })).rejects.toThrow(/has a damaged floor for x/);
    writeFileSync(damaged, '[]');
    await expect(gate({ stateFile: damaged })).rejects.toThrow(/is not a register state/);
    mkdirSync(join(dir, 'a-directory'));
    await expect(gate({ stateFile: join(dir, 'a-directory') })).rejects.toThrow(/is not a regular file/);
    await expect(gate({ stateFile: join(dir, 'missing', 'state.json') })).rejects.toThrow(
      /cannot be created: its directory .*missing does not exist/,
    );
  });
});

describe('the register cannot be rolled back: iat ahead of the clock', () => {
  it('refuses a copy whose iat is beyond the clock skew; genuine newer copies are still taken', async () => {
    const { register, clock, gate } = await world();
    const mock = await gate();
    register.state.iatOffset = 3600;
    revoke(register);
    clock.now += 1000;
    expect((await ask(mock)).status).toBe(200); // the held copy decides
    expect(mock.registerStatus()?.lastError).toMatch(
      /the register's iat is 3600 s ahead of this gate's clock, more than the 60 s of clock skew allowed/,
    );
    // Within the skew it is taken, and does not stop the genuine copies that follow (lower iat, higher seq).
    register.state.iatOffset = 30;
    clock.now += 1000;
    expect((await ask(mock)).body.error_description).toContain('revoked');
    register.state.iatOffset = 0;
    register.state.partners[0]!.status = 'active';
    clock.now += 1000;
    expect((await ask(mock)).status).toBe(200);
    expect(mock.registerStatus()).toMatchObject({ seq: register.state.seq - 1 });
    expect(mock.registerStatus()?.lastError).toBeUndefined();
  });

  it('the skew is an option (clockSkewSeconds)', async () => {
    const { register, gate } = await world((r) => {
      r.state.iatOffset = 30;
    });
    const strict = await gate({ clockSkewSeconds: 10 });
    expect((await ask(strict)).body.error_description).toContain('30 s ahead');
    register.state.iatOffset = 10;
    const lenient = await gate({ clockSkewSeconds: 10 });
    expect((await ask(lenient)).status).toBe(200);
    await expect(gate({ clockSkewSeconds: -1 })).rejects.toThrow(/clockSkewSeconds must be an integer/);
  });
});

describe('a copy is held no longer than min(max-age, exp)', () => {
  it.each(['register', 'partner'] as const)(
    'max-age beyond exp never leaves the gate without a copy while the service serves one (lookup %s)',
    async (lookup) => {
      const { register, clock, gate } = await world((r) => {
        r.state.maxAge = 86_400;
        r.state.ttlSeconds = 120;
      });
      const mock = await gate({ lookup });
      expect((await ask(mock)).status).toBe(200);
      const reads = () => register.asked.register + (register.asked.partners[partner.partnerId] ?? 0);
      const before = reads();
      clock.now += 100_000; // within exp: no read
      expect((await ask(mock)).status).toBe(200);
      expect(reads()).toBe(before);
      for (let round = 1; round <= 4; round++) {
        clock.now += 60_000; // past the held copy's exp every other round
        const answer = await ask(mock);
        expect(answer.status).toBe(200);
        expect(mock.registerStatus()?.state).toBe('fresh');
      }
      expect(reads()).toBe(before + 2);
    },
  );
});
