import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { createMarkdownRenderer } from 'vitepress';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type RegisterServer,
  startRegisterServer,
} from '../../../packages/mock/test/support/register-server.js';
import { extractSnippets, type Snippet } from '../src/site/fences.js';
import { loadGuides } from '../src/site/guides.js';
import { docsRoot } from './helpers/build-site.js';

// "From staging to production", run as written where it concerns the toolkit's packages: the
// production clients file of the guide, its partner-mock command (the production profile, reading a
// register signed by a test key on 127.0.0.1 as the certification service would), and its first
// production call — approved, then revoked. The service's own commands (runs, decisions, webhooks)
// are the service's tests' to run.

const markdown = await createMarkdownRenderer(docsRoot);
const guide = loadGuides(join(docsRoot, 'guides')).find((g) => g.slug === 'from-staging-to-production');
if (!guide) throw new Error('guides/NN-from-staging-to-production.md is missing');
const snippets = extractSnippets(markdown.parse(guide.markdown, {}), guide.file);

function only(what: string, test: (snippet: Snippet) => boolean): Snippet {
  const found = snippets.filter(test);
  if (found.length !== 1)
    throw new Error(`${guide!.file}: expected one ${what} block, found ${found.length}`);
  return found[0]!;
}

const clientsBlock = only(
  'production clients (json)',
  (s) => s.language === 'json' && s.code.includes('clientSecret'),
);
const mockBlock = only('partner-mock', (s) => s.language === 'sh' && s.code.includes('--profile production'));
const callBlock = only(
  'first production call',
  (s) => s.language === 'ts' && s.code.includes("environment: 'production'"),
);
const webhookBlock = only(
  'webhook verification',
  (s) => s.language === 'ts' && s.code.includes('verifyWebhook'),
);
const mockCommand = mockBlock.code.trim();
const productionClients = JSON.parse(clientsBlock.code) as Array<{
  partnerId: string;
  clientId: string;
  clientSecret: string;
}>;
const partner = productionClients[0]!;

const workspaceMock = join(docsRoot, 'node_modules', '.bin', 'partner-mock');
let dir = '';
let register: RegisterServer;
let mock: ChildProcess | undefined;
let addresses = { authUrl: '', baseUrl: '' };
let callFile = '';
let webhookFile = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'production-guide-'));
  register = await startRegisterServer();
  register.state.maxAge = 1;
  register.state.partners = [
    {
      partnerId: partner.partnerId,
      name: 'Acme Lending',
      status: 'active',
      scopes: ['read:loans', 'create:loan_draft'],
      validUntil: new Date(Date.now() + 365 * 86_400_000).toISOString(),
      decisionId: 'dec_guide',
    },
  ];
  await writeFile(join(dir, 'production-clients.json'), clientsBlock.code);
  await writeFile(join(dir, 'register.key'), `${register.key}\n`);
  // `npx -p @partner-lending/mock partner-mock …` as a partner types it, resolved to this workspace's
  // build instead of the registry: an npx on PATH that accepts exactly that form and nothing else.
  const bin = join(dir, 'bin');
  await mkdir(bin);
  await writeFile(
    join(bin, 'npx'),
    `#!/bin/sh\n[ "$1" = -p ] && [ "$2" = @partner-lending/mock ] && [ "$3" = partner-mock ] || { echo "unexpected npx $*" >&2; exit 64; }\nshift 3\nexec "${workspaceMock}" "$@"\n`,
  );
  await chmod(join(bin, 'npx'), 0o755);
  mock = spawn('sh', ['-c', mockCommand], {
    cwd: dir,
    env: { PATH: `${bin}:${process.env.PATH}`, SERVICE: register.url },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let errors = '';
  mock.stderr?.on('data', (chunk: Buffer) => {
    errors += chunk.toString();
  });
  addresses = await new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`partner-mock printed no addresses: ${output}${errors}`)),
      30_000,
    );
    mock!.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const authUrl = /auth server {2}(\S+)/.exec(output)?.[1];
      const baseUrl = /partner API {2}(\S+)/.exec(output)?.[1];
      if (authUrl && baseUrl && output.includes('Stop with Ctrl+C')) {
        clearTimeout(timer);
        resolve({ authUrl, baseUrl });
      }
    });
    mock!.on('exit', (code) => reject(new Error(`partner-mock exited ${code}: ${output}${errors}`)));
  });
  expect(output).toMatch(/register {5}1 partner\(s\), issued /);
  expect(output).not.toContain(register.key);
  const { outputText } = ts.transpileModule(callBlock.code, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  });
  // Inside apps/docs, so that @partner-lending/sdk resolves to the workspace build.
  const runDir = join(docsRoot, 'test-results', 'production-guide');
  await mkdir(runDir, { recursive: true });
  callFile = join(runDir, 'first-production-call.mjs');
  await writeFile(callFile, outputText);
  webhookFile = join(runDir, 'verify-webhook.mjs');
  await writeFile(
    webhookFile,
    ts.transpileModule(webhookBlock.code, {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    }).outputText,
  );
}, 120_000);

afterAll(async () => {
  mock?.kill('SIGTERM');
  await register?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

type Run = { code: number; stdout: string; stderr: string };
async function firstCall(env: Record<string, string>): Promise<Run> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [callFile], {
      cwd: docsRoot,
      timeout: 30_000,
      env: { PATH: process.env.PATH ?? '', ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

const productionEnv = () => ({
  LENDING_PRODUCTION_AUTH_URL: addresses.authUrl,
  LENDING_PRODUCTION_BASE_URL: addresses.baseUrl,
  PARTNER_CLIENT_ID: partner.clientId,
  PARTNER_CLIENT_SECRET: partner.clientSecret,
});

describe('the production guide, as written', () => {
  it('the mock command starts the production profile on the guide’s files, reading the register', () => {
    expect(mockCommand).toContain('--register "$SERVICE/register" --register-key-file register.key');
    expect(addresses.authUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(register.asked.register).toBeGreaterThanOrEqual(1);
  });

  it('the first production call lists loans for the approved partner', async () => {
    const run = await firstCall(productionEnv());
    expect(run.stderr).toBe('');
    expect(run.stdout.trim()).toBe('first production call: 5 loans');
    expect(run.code).toBe(0);
  });

  it('never falls back to the staging variables (control: a staging set-up alone does not reach production)', async () => {
    const run = await firstCall({
      PARTNER_AUTH_URL: addresses.authUrl,
      PARTNER_BASE_URL: addresses.baseUrl,
      PARTNER_CLIENT_ID: partner.clientId,
      PARTNER_CLIENT_SECRET: partner.clientSecret,
    });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('LENDING_PRODUCTION_AUTH_URL is not set');
  });

  it('after a revocation, within the register’s max-age, the same call says it is not approved and why', async () => {
    register.state.partners[0]!.status = 'revoked';
    // The register's max-age is 1 s: a token request after it reads the register again.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const run = await firstCall(productionEnv());
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim()).toBe(
      `not approved for production: partner ${partner.partnerId} is not approved for production: its approval was revoked (decision dec_guide). Certify your integration at ${register.url} (a certification run, then a reviewer's approval), then ask again`,
    );
    expect(run.stderr).not.toContain(partner.clientSecret);
    // The guide shows that line, with the vendor's addresses.
    const shown = only(
      'refusal (text)',
      (s) => s.language === 'text' && s.code.includes('not approved for production'),
    );
    expect(shown.code.trim()).toMatch(
      /^not approved for production: partner ptn_acme is not approved for production: its approval was revoked \(decision dec_…\)\. Certify your integration at https:\/\/\S+ \(a certification run, then a reviewer's approval\), then ask again$/,
    );
  });
});

describe('the guide’s webhook check', () => {
  // The worked example of the Standard Webhooks specification: secret, id, timestamp, body, signature.
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const body = '{"test": 2432232314}';
  const at = 1614265330;
  const headers = (signature: string, timestamp = String(at)) =>
    new Headers({
      'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      'webhook-timestamp': timestamp,
      'webhook-signature': signature,
    });
  const signed = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';
  type Verify = (secret: string, headers: Headers, body: string, now?: number) => boolean;
  let verify: Verify;
  beforeAll(async () => {
    verify = ((await import(webhookFile)) as { verifyWebhook: Verify }).verifyWebhook;
  });

  it('accepts the specification’s example, also among other signatures', () => {
    expect(verify(secret, headers(signed), body, at * 1000)).toBe(true);
    expect(verify(secret, headers(`v1,c2lnbmF0dXJlLW9mLWFub3RoZXIta2V5 ${signed}`), body, at * 1000)).toBe(
      true,
    );
  });

  it('refuses a changed byte, another secret, an old timestamp or a missing header (the controls)', () => {
    expect(verify(secret, headers(signed), body.replace('2', '3'), at * 1000)).toBe(false);
    expect(verify('whsec_c2VjcmV0LW9mLWFub3RoZXItZW5kcG9pbnQ=', headers(signed), body, at * 1000)).toBe(
      false,
    );
    expect(verify(secret, headers(signed), body, (at + 301) * 1000)).toBe(false);
    expect(verify(secret, headers(signed.replace('v1,', 'v2,')), body, at * 1000)).toBe(false);
    expect(verify(secret, new Headers({ 'webhook-signature': signed }), body, at * 1000)).toBe(false);
  });
});
