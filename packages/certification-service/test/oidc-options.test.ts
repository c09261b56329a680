import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Provider from 'oidc-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bin, runCommand, startServe } from './support/service.js';

const dir = mkdtempSync(join(tmpdir(), 'pcs-oidc-options-'));
const secret = 'cli-test-secret-5f2a9c0e7d1b4a36';
const secretFile = join(dir, 'oidc-secret');
writeFileSync(secretFile, `${secret}\n`, { mode: 0o600 });
let idp: Server;
let issuer: string;

beforeAll(async () => {
  idp = createServer();
  await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(idp.address() as { port: number }).port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'certification-service',
        client_secret: secret,
        redirect_uris: ['http://127.0.0.1:9/signin/oidc/callback'],
      },
    ],
    cookies: { keys: ['oidc-options-test'] },
  });
  idp.on('request', provider.callback());
});
afterAll(async () => {
  idp?.closeAllConnections();
  await new Promise((resolve) => idp?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

const serve = (args: string[], env: Record<string, string> = {}) =>
  runCommand(process.execPath, [bin, 'serve', '--port', '0', ...args], {
    cwd: dir,
    env: { DATABASE_URL: '', SIGNING_KEY_FILE: '', OIDC_CLIENT_SECRET: '', ...env },
    timeoutMs: 60_000,
  });
const oidcArgs = (more: string[] = []) => [
  '--oidc-issuer',
  issuer,
  '--oidc-client-id',
  'certification-service',
  ...more,
];

describe('serve --oidc-* options', () => {
  it('--help lists them and OIDC_CLIENT_SECRET', async () => {
    const help = await runCommand(process.execPath, [bin, '--help']);
    for (const option of [
      '--oidc-issuer URL',
      '--oidc-client-id ID',
      '--oidc-client-secret-file FILE',
      '--oidc-allow CLAIM=VALUE',
      'OIDC_CLIENT_SECRET',
    ])
      expect(help.stdout).toContain(option);
  });

  it.each([
    [['--oidc-client-secret', secret], /not taken on the command line.*--oidc-client-secret-file FILE/],
    [[`--oidc-client-secret=${secret}`], /not taken on the command line/],
    [['--oidc-client-id', 'x'], /--oidc-client-id needs --oidc-issuer URL/],
    [['--oidc-issuer', 'https://login.example.com'], /--oidc-issuer needs --oidc-client-id ID/],
    [
      ['--oidc-issuer', 'https://login.example.com', '--oidc-client-id', 'x', '--oidc-allow', 'groups=a'],
      /needs the client secret: --oidc-client-secret-file FILE, or the environment variable OIDC_CLIENT_SECRET/,
    ],
    [
      ['--oidc-issuer', 'http://login.example.com', '--oidc-client-id', 'x', '--oidc-allow', 'groups=a'],
      /--oidc-issuer takes the provider's https issuer URL.*http only on localhost/,
      { OIDC_CLIENT_SECRET: secret },
    ],
    [
      ['--oidc-issuer', 'https://login.example.com', '--oidc-client-id', 'x'],
      /needs at least one --oidc-allow CLAIM=VALUE/,
      { OIDC_CLIENT_SECRET: secret },
    ],
    [
      ['--oidc-issuer', 'https://login.example.com', '--oidc-client-id', 'x', '--oidc-allow', 'groups'],
      /--oidc-allow takes CLAIM=VALUE, e.g. groups=cert-reviewers/,
      { OIDC_CLIENT_SECRET: secret },
    ],
    [
      ['--oidc-issuer', 'http://127.0.0.1:1', '--oidc-client-id', 'x', '--oidc-allow', 'groups=a'],
      /cannot read the OpenID provider's discovery document at http:\/\/127\.0\.0\.1:1\/\.well-known\/openid-configuration/,
      { OIDC_CLIENT_SECRET: secret },
    ],
  ] as [string[], RegExp, Record<string, string>?][])(
    'refuses %j with exit 2, saying what to do, the secret unprinted',
    async (args, message, env) => {
      const result = await serve(args, env ?? {});
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stdout + result.stderr).not.toContain(secret);
    },
  );

  it.each([
    ['--oidc-client-secret-file', ['--oidc-client-secret-file', secretFile], {}],
    ['OIDC_CLIENT_SECRET', [], { OIDC_CLIENT_SECRET: secret }],
  ])(
    'starts with the secret from %s and sends the sign-in to the provider with PKCE, state and nonce',
    async (_, extra, env) => {
      const serveDir = mkdtempSync(join(dir, 'serve-'));
      const server = await startServe({
        cwd: serveDir,
        env: { OIDC_CLIENT_SECRET: '', ...env },
        args: oidcArgs([...extra, '--oidc-allow', 'groups=cert-reviewers']),
      });
      try {
        const signin = await fetch(`${server.url}/signin`);
        expect(await signin.text()).toContain('href="/signin/oidc"');
        const start = await fetch(`${server.url}/signin/oidc`, { redirect: 'manual' });
        expect(start.status).toBe(303);
        const location = new URL(start.headers.get('location')!);
        expect(location.origin + location.pathname).toBe(`${issuer}/auth`);
        expect(Object.fromEntries(location.searchParams)).toMatchObject({
          client_id: 'certification-service',
          response_type: 'code',
          redirect_uri: `${server.url}/signin/oidc/callback`,
          scope: 'openid profile email',
          code_challenge_method: 'S256',
          code_challenge: expect.stringMatching(/^[\w-]{43}$/),
          state: expect.stringMatching(/^[\w-]{20,}$/),
          nonce: expect.stringMatching(/^[\w-]{20,}$/),
        });
        expect(start.headers.get('set-cookie')).toMatch(
          /^pcs_oidc=.*; Max-Age=600; Path=\/signin\/oidc\/callback; HttpOnly; SameSite=Lax/,
        );
        expect(server.output()).not.toContain(secret);
      } finally {
        expect(await server.stop()).toBe(0);
      }
    },
  );

  it('the control: without --oidc-issuer the local credential form stays', async () => {
    const server = await startServe({ cwd: mkdtempSync(join(dir, 'serve-')) });
    try {
      expect(await (await fetch(`${server.url}/signin`)).text()).toContain('name="credential"');
      expect((await fetch(`${server.url}/signin/oidc`, { redirect: 'manual' })).status).toBe(404);
    } finally {
      await server.stop();
    }
  });
});
