import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { faultNames } from '../src/index.js';
import { startEvidenceReceiver, takenRecords } from './support/evidence-receiver.js';
import { startRegisterServer } from './support/register-server.js';

// The CLI is tested as users run it: the committed launcher importing the built dist/cli.js.
const bin = fileURLToPath(new URL('../bin/partner-mock.js', import.meta.url));
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

beforeAll(() => {
  if (!existsSync(fileURLToPath(new URL('../dist/cli.js', import.meta.url))))
    throw new Error('dist/cli.js is missing: run `pnpm --filter @partner-lending/mock build` first');
});

/** A port that was free a moment ago (the OS picks it; closed again before the CLI binds it). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function start(args: string[]) {
  const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const firstLine = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no output; stderr: ${stderr}`)), 15_000);
    const check = () => {
      if (stdout.includes('\n')) {
        clearTimeout(timer);
        resolve(stdout.slice(0, stdout.indexOf('\n')));
      }
    };
    child.stdout.on('data', check);
    child.on('exit', () => {
      clearTimeout(timer);
      check();
      reject(new Error(`exited; stderr: ${stderr}`));
    });
  });
  // Runs that are expected to fail never read the first line.
  firstLine.catch(() => undefined);
  return { child, exited, firstLine, output: () => ({ stdout, stderr }) };
}

describe('cli: partner-mock', () => {
  it('--json prints exactly one JSON line with addresses and clients, serves them, and stops on SIGTERM', async () => {
    const run = start(['--json', '--profile', 'rfc9068', '--ttl', '120']);
    const info = JSON.parse(await run.firstLine);
    expect(Object.keys(info)).toEqual(['authUrl', 'baseUrl', 'audience', 'issuer', 'clients']);
    expect(info.audience).toBe(info.baseUrl);
    expect(info.issuer).toBe(info.authUrl);
    expect(info.clients).toHaveLength(3);
    expect(Object.keys(info.clients[0]).sort()).toEqual([
      'authorizedScopes',
      'clientId',
      'clientSecret',
      'partnerId',
    ]);
    const client = info.clients[0];
    const token = await fetch(`${info.authUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: client.clientId,
        client_secret: client.clientSecret,
        audience: info.audience,
      }),
    });
    const body = (await token.json()) as { expires_in: number; access_token: string };
    expect(body.expires_in).toBe(120);
    const loans = await fetch(`${info.baseUrl}/v3/partner/${client.partnerId}/loans`, {
      headers: { authorization: `Bearer ${body.access_token}` },
    });
    expect(loans.status).toBe(200);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    expect(run.output().stdout.trim().split('\n')).toHaveLength(1);
  });

  it('prints client ids but not secrets by default, secrets with --show-secrets, and stops on SIGINT', async () => {
    const hidden = start([]);
    await hidden.firstLine;
    await new Promise((resolve) => setTimeout(resolve, 100));
    hidden.child.kill('SIGINT');
    expect(await hidden.exited).toBe(0);
    const text = hidden.output().stdout;
    expect(text).toMatch(/client_id demo1-/);
    expect(text).not.toMatch(/client_secret/);
    expect(text).toContain('client secrets are hidden');

    const shown = start(['--show-secrets']);
    await shown.firstLine;
    await new Promise((resolve) => setTimeout(resolve, 100));
    shown.child.kill('SIGINT');
    expect(await shown.exited).toBe(0);
    expect(shown.output().stdout).toMatch(/client_secret \S{20,}/);
  });

  it('uses --clients, --port, --auth-port and --fault', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'partner-mock-'));
    const file = join(dir, 'clients.json');
    const clients = [
      { partnerId: 'p-file', clientId: 'c-file', clientSecret: 's-file', authorizedScopes: ['read:loans'] },
    ];
    writeFileSync(file, JSON.stringify(clients));
    const [apiPort, authPort] = [await freePort(), await freePort()];
    const run = start([
      '--json',
      '--port',
      String(apiPort),
      '--auth-port',
      String(authPort),
      '--clients',
      file,
      '--fault',
      'token-type-not-bearer',
      '--fault',
      'api-ignore-scope',
    ]);
    const info = JSON.parse(await run.firstLine);
    expect(info.baseUrl).toBe(`http://127.0.0.1:${apiPort}`);
    expect(info.authUrl).toBe(`http://127.0.0.1:${authPort}`);
    expect(info.clients).toEqual(clients);
    const token = await fetch(`${info.authUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials&client_id=c-file&client_secret=s-file',
    });
    expect(((await token.json()) as { token_type: string }).token_type).toBe('mac');
    run.child.kill('SIGTERM');
    await run.exited;
  });

  it.each([
    [['--fault', 'nope'], `partner-mock: Unknown fault "nope". Expected one of: ${faultNames.join(', ')}.`],
    [['--port', 'abc'], 'partner-mock: --port must be an integer from 0 to 65535, got "abc".'],
    [['--ttl', '0'], 'partner-mock: --ttl must be an integer from 1 to 315360000, got "0".'],
    [['--profile', 'x'], 'partner-mock: --profile must be one of deployed, rfc9068, production, got "x".'],
    [['--bogus'], "partner-mock: Unknown option '--bogus'. Run partner-mock --help for the options."],
    [
      ['--clients', '/nonexistent/clients.json'],
      'partner-mock: cannot read the clients file /nonexistent/clients.json: ENOENT. Give a readable JSON file.',
    ],
    [['--port', '-1'], 'partner-mock: --port must be an integer from 0 to 65535, got "-1".'],
    [['--auth-port'], 'partner-mock: --auth-port needs a value: an integer from 0 to 65535.'],
    [
      ['--clients', 'https://user:hunter2@example.invalid/clients.json'],
      'partner-mock: --clients holds a URL with credentials (user:password@), which is refused and not shown. Keep passwords out of command lines.',
    ],
    [
      ['--clients', '/'],
      'partner-mock: the clients file / is a directory, not a regular file. Give a JSON file.',
    ],
  ])('exits 2 with one clear line for %j', async (args, message) => {
    const run = start(args);
    expect(await run.exited).toBe(2);
    expect(run.output().stderr).toBe(`${message}\n`);
    expect(run.output().stdout).toBe('');
  });

  it('--help prints the usage and every fault name, and exits 0', async () => {
    const run = start(['--help']);
    expect(await run.exited).toBe(0);
    const { stdout } = run.output();
    expect(stdout).toMatch(/^Usage: partner-mock \[options\]/);
    expect(stdout).toContain(`Faults: ${faultNames.join(', ')}`);
  });

  it('exits 1 with one line when the port is taken', async () => {
    const first = start(['--json']);
    const info = JSON.parse(await first.firstLine);
    const second = start(['--port', new URL(info.baseUrl).port]);
    expect(await second.exited).toBe(1);
    expect(second.output().stderr).toMatch(
      /^partner-mock: startMock: could not listen on 127\.0\.0\.1 .*\n$/,
    );
    first.child.kill('SIGTERM');
    await first.exited;
  });

  it('exits 2 at once for a FIFO as the clients file, instead of waiting for a writer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'partner-mock-'));
    const fifo = join(dir, 'clients.fifo');
    execFileSync('mkfifo', [fifo]);
    const run = start(['--clients', fifo]);
    expect(await run.exited).toBe(2);
    expect(run.output().stderr).toBe(
      `partner-mock: the clients file ${fifo} is a FIFO (named pipe), not a regular file. Give a JSON file.\n`,
    );
  });

  it('exits 2 for a clients file larger than 1 MiB, without parsing it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'partner-mock-'));
    const file = join(dir, 'clients.json');
    writeFileSync(file, `[${' '.repeat(1024 * 1024)}]`);
    const run = start(['--clients', file]);
    expect(await run.exited).toBe(2);
    expect(run.output().stderr).toBe(
      `partner-mock: the clients file ${file} is larger than 1 MiB. Give a JSON array of clients.\n`,
    );
  });

  it('exits 2 for a clients file that is not a valid registry', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'partner-mock-'));
    const file = join(dir, 'clients.json');
    writeFileSync(
      file,
      JSON.stringify([{ partnerId: 'p', clientId: 'c', clientSecret: 's', authorizedScopes: ['admin'] }]),
    );
    const run = start(['--clients', file]);
    expect(await run.exited).toBe(2);
    expect(run.output().stderr).toMatch(
      /^partner-mock: the clients file .* entry 0 has authorizedScopes that are not an array of known scopes\./,
    );
  });
  it('--leeway reaches the API: an expired token is still accepted within it, and refused without it', async () => {
    // Two mocks whose tokens live 1 s, one with 30 s of exp leeway; both tokens are used after they expired.
    const lenient = start(['--json', '--ttl', '1', '--leeway', '30']);
    const strict = start(['--json', '--ttl', '1']);
    const infos = [JSON.parse(await lenient.firstLine), JSON.parse(await strict.firstLine)];
    const tokens = await Promise.all(
      infos.map(async (info) => {
        const [client] = info.clients;
        const answer = await fetch(`${info.authUrl}/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({
            grant_type: 'client_credentials',
            scope: 'read:loans',
            audience: info.audience,
            client_id: client.clientId,
            client_secret: client.clientSecret,
          }),
        });
        expect(answer.status).toBe(200);
        return ((await answer.json()) as { access_token: string }).access_token;
      }),
    );
    // exp is whole seconds: past 2 s, both tokens have expired.
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    const statuses = await Promise.all(
      infos.map(async (info, index) => {
        const partnerId = info.clients[0].partnerId;
        const answer = await fetch(`${info.baseUrl}/v3/partner/${encodeURIComponent(partnerId)}/loans`, {
          headers: { authorization: `Bearer ${tokens[index]}` },
        });
        await answer.arrayBuffer();
        return answer.status;
      }),
    );
    expect(statuses).toEqual([200, 401]);
  }, 30_000);

  it('--profile production issues tokens only as the register says, and prints where it reads it', async () => {
    const register = await startRegisterServer();
    try {
      register.state.partners = [
        {
          partnerId: 'ptn_cli',
          name: 'CLI Lending',
          status: 'active',
          scopes: ['read:loans'],
          validUntil: null,
          decisionId: 'dec_cli',
        },
      ];
      const dir = mkdtempSync(join(tmpdir(), 'partner-mock-production-'));
      writeFileSync(join(dir, 'register.key'), `${register.key}\n`);
      const clients = [
        {
          partnerId: 'ptn_cli',
          clientId: 'prod-cli',
          clientSecret: 'prod-secret-0123456789',
          authorizedScopes: ['read:loans', 'create:repayment'],
        },
        {
          partnerId: 'ptn_other',
          clientId: 'prod-other',
          clientSecret: 'other-secret-0123456789',
          authorizedScopes: ['read:loans'],
        },
      ];
      writeFileSync(join(dir, 'clients.json'), JSON.stringify(clients));
      const args = [
        '--profile',
        'production',
        '--register',
        register.registerUrl,
        '--register-key-file',
        join(dir, 'register.key'),
        '--clients',
        join(dir, 'clients.json'),
      ];
      const run = start([...args, '--json']);
      const info = JSON.parse(await run.firstLine);
      expect(info.register).toMatchObject({
        url: register.registerUrl,
        jwksUrl: register.jwksUrl,
        state: 'fresh',
        partners: 1,
      });
      const ask = (clientId: string, clientSecret: string) =>
        fetch(`${info.authUrl}/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({
            grant_type: 'client_credentials',
            client_id: clientId,
            client_secret: clientSecret,
          }),
        }).then(async (response) => ({
          status: response.status,
          body: (await response.json()) as Record<string, string>,
        }));
      const granted = await ask('prod-cli', 'prod-secret-0123456789');
      expect(granted).toMatchObject({ status: 200, body: { scope: 'read:loans', partnerId: 'ptn_cli' } });
      const refused = await ask('prod-other', 'other-secret-0123456789');
      expect(refused.status).toBe(400);
      expect(refused.body.error_description).toContain(
        'partner ptn_other is not approved for production: it was never approved',
      );
      run.child.kill('SIGTERM');
      expect(await run.exited).toBe(0);
      expect(run.output().stdout).not.toContain(register.key);

      const human = start(args);
      await human.firstLine;
      await new Promise((resolve) => setTimeout(resolve, 200));
      human.child.kill('SIGTERM');
      expect(await human.exited).toBe(0);
      const text = human.output().stdout;
      expect(text).toContain(`register     ${register.registerUrl}  (JWKS ${register.jwksUrl})`);
      expect(text).toMatch(/register {5}1 partner\(s\), issued .*, valid until .*, seq \d+/);
      expect(text).toContain(
        'replay floor in memory only: a restart forgets it (--register-state FILE keeps it)',
      );
      expect(text).not.toContain(register.key);

      // With --register-state, the floor is kept there; a damaged file stops the start, naming it.
      const state = join(dir, 'register-state.json');
      const kept = start([...args, '--register-state', state, '--json']);
      expect(JSON.parse(await kept.firstLine).register).toMatchObject({
        stateFile: state,
        seq: expect.any(Number),
      });
      kept.child.kill('SIGTERM');
      expect(await kept.exited).toBe(0);
      expect(JSON.parse(readFileSync(state, 'utf8')).floors[register.registerUrl].seq).toEqual(
        expect.any(Number),
      );
      // A signal while it starts (the register still answering): a clean stop, nothing announced.
      let answer = () => {};
      register.state.hold = new Promise<void>((resolve) => {
        answer = resolve;
      });
      const asked = register.asked.register;
      const early = start([...args, '--json']);
      await expect.poll(() => register.asked.register, { timeout: 10_000 }).toBeGreaterThan(asked);
      early.child.kill('SIGTERM');
      await new Promise((resolve) => setTimeout(resolve, 100));
      answer();
      register.state.hold = undefined;
      expect(await early.exited).toBe(0);
      expect(early.output().stdout).toBe('');

      writeFileSync(state, 'not json');
      const damaged = start([...args, '--register-state', state]);
      expect(await damaged.exited).toBe(1);
      expect(damaged.output().stderr).toContain(
        `partner-mock: startMock: the register state file ${state} is not valid JSON`,
      );
    } finally {
      await register.close();
    }
  }, 30_000);
  it('--evidence: a gate killed with SIGKILL sends at its next start what its spool held, under the same Idempotency-Key', async () => {
    const register = await startRegisterServer();
    const receiver = await startEvidenceReceiver({ kind: 'busy', status: 503 });
    try {
      register.state.partners = [
        {
          partnerId: 'ptn_cli',
          name: 'CLI Lending',
          status: 'active',
          scopes: ['read:loans'],
          validUntil: null,
          decisionId: 'dec_cli',
        },
      ];
      const dir = mkdtempSync(join(tmpdir(), 'partner-mock-evidence-'));
      const evidenceKey = 'er_cli_reporter_key_0123456789';
      writeFileSync(join(dir, 'register.key'), `${register.key}\n`);
      writeFileSync(join(dir, 'evidence.key'), `${evidenceKey}\n`);
      writeFileSync(join(dir, 'operator.key'), 'op_cli_operator_key_0123456789\n');
      writeFileSync(
        join(dir, 'clients.json'),
        JSON.stringify([
          {
            partnerId: 'ptn_cli',
            clientId: 'prod-cli',
            clientSecret: 'prod-secret-0123456789',
            authorizedScopes: ['read:loans'],
          },
        ]),
      );
      const spool = join(dir, 'evidence.spool');
      const args = [
        '--profile',
        'production',
        '--register',
        register.registerUrl,
        '--register-key-file',
        join(dir, 'register.key'),
        '--clients',
        join(dir, 'clients.json'),
        '--evidence',
        receiver.url,
        '--evidence-key-file',
        join(dir, 'evidence.key'),
        '--evidence-spool',
        spool,
        '--operator-key-file',
        join(dir, 'operator.key'),
      ];
      const first = start([...args, '--json']);
      const info = JSON.parse(await first.firstLine);
      expect(info.evidence).toMatchObject({ url: receiver.url, spool: { file: spool }, pending: 0 });
      const token = await fetch(`${info.authUrl}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: 'prod-cli',
          client_secret: 'prod-secret-0123456789',
        }),
      });
      expect(token.status).toBe(200);
      // A batch is written to the spool (fsync) before its first send: once the service was asked, it is on disk.
      const deadline = Date.now() + 10_000;
      while (receiver.attempts.length === 0 && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 50));
      expect(receiver.attempts.length).toBeGreaterThan(0);
      first.child.kill('SIGKILL');
      await first.exited;
      expect(readFileSync(spool, 'utf8')).toContain(receiver.attempts[0]!.idempotencyKey!);

      receiver.mode = { kind: 'ok' };
      const second = start([...args, '--json']);
      // What the spool held is sent first (perhaps before the start-up line is printed).
      expect(JSON.parse(await second.firstLine).evidence).toMatchObject({ url: receiver.url });
      while (receiver.taken.size === 0 && Date.now() < deadline + 10_000)
        await new Promise((resolve) => setTimeout(resolve, 50));
      expect([...receiver.taken.keys()]).toEqual([receiver.attempts[0]!.idempotencyKey]);
      expect(takenRecords(receiver)).toEqual([
        expect.objectContaining({
          'partner.id': 'ptn_cli',
          'url.path': '/oauth/token',
          'http.response.status_code': 200,
        }),
      ]);
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
      const output = JSON.stringify([first.output(), second.output()]);
      expect(output).not.toContain(evidenceKey);
      expect(output).not.toContain('op_cli_operator_key_0123456789');

      // The human-readable start says where evidence goes, and the operator route.
      const human = start(args);
      await human.firstLine;
      await new Promise((resolve) => setTimeout(resolve, 200));
      human.child.kill('SIGTERM');
      expect(await human.exited).toBe(0);
      const text = human.output().stdout;
      expect(text).toContain(`evidence     reported to ${receiver.url}`);
      expect(text).toContain(`evidence     spooled in ${spool}`);
      expect(text).toContain('token fingerprints under a key new at this start');
      expect(text).toMatch(/operator {5}POST http:\/\/127\.0\.0\.1:\d+\/operator\/revoke-tokens/);
      expect(text).not.toContain(evidenceKey);
    } finally {
      await receiver.close();
      await register.close();
    }
  }, 60_000);
});
