import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startPostgres,
  type ThrowawayPostgres,
} from '../../../packages/certification-service/test/support/postgres.mjs';
import type { Snippet } from '../src/site/fences.js';
import { docsRoot } from './helpers/build-site.js';
import { bins, guideBlocks, repoRoot, type ShellRunner, shellRunner } from './helpers/guide-shell.js';
import { reviewerSession } from './helpers/reviewer.js';

// "From staging to production", run as written. Every ```sh block of the guide runs, in the guide's
// order, in one working directory, against real processes on 127.0.0.1: the certification
// service (`partner-certification-service serve` on a throwaway PostgreSQL, so that the operator's
// `admin` command runs beside it), `partner-conformance`, `partner-mock` (the `npx -p` form resolved to
// this workspace's build), curl. What the test gives the blocks is only what the guide names: the
// variables `$SERVICE`, `$API_KEY` (from `admin add-partner`, the operator's onboarding), `$RUN_ID` and
// `$DECISION_ID` (read from what the blocks before them printed), the partner's own `./journey.sh` (the
// conformance suite's reference journey), and the operator's `DATABASE_URL`. The production clients
// file is the guide's JSON block with its placeholder partner id replaced by the real one. The
// reviewer's steps (approve, revoke) go through the reviewer pages' forms over HTTP, as the guide says;
// the first production call is the guide's TypeScript block, run with the variables the guide names.
// Blocks run with `bash -e -o pipefail`: a failing command, also inside a pipe, fails the block.
// A block that fails stops the test with the guide's file and line; the negative controls change one
// flag or path in a block and expect exactly that.

const { shellBlocks, only } = await guideBlocks('from-staging-to-production');
const clientsBlock = only(
  'production clients (json)',
  (s) => s.language === 'json' && s.code.includes('clientSecret'),
);
const callBlock = only(
  'first production call',
  (s) => s.language === 'ts' && s.code.includes("environment: 'production'"),
);
const webhookBlock = only(
  'webhook verification',
  (s) => s.language === 'ts' && s.code.includes('verifyWebhook'),
);
const guideClients = JSON.parse(clientsBlock.code) as Array<{
  partnerId: string;
  clientId: string;
  clientSecret: string;
}>;
const placeholderPartner = guideClients[0]!.partnerId;

const referenceJourney = join(repoRoot, 'packages/conformance/test/clients/reference-client.mjs');
const toTranspiled = (code: string) =>
  ts.transpileModule(code, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText;

let dir = '';
let work = '';
let postgres: ThrowawayPostgres | undefined;
let databaseUrl = '';
let service: ChildProcess | undefined;
let serviceUrl = '';
let serviceOutput = '';
let partner = { partnerId: '', apiKey: '' };
let reviewerCredential = '';
let hookSecret = '';
const received: Array<{ headers: Headers; body: string }> = [];
let hooks: Server | undefined;
/** The guide's variables, as the blocks before set them. */
const vars: Record<string, string> = {};
let callFile = '';
let webhookFile = '';

type Run = { code: number; stdout: string; stderr: string };

function run(command: string, args: string[], options: { cwd: string; env: Record<string, string> }) {
  return new Promise<Run>((resolve) => {
    execFile(
      command,
      args,
      { cwd: options.cwd, env: options.env, timeout: 90_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) =>
        resolve({
          code: error ? ((error as { code?: number }).code ?? 1) : 0,
          stdout: String(stdout),
          stderr: String(stderr),
        }),
    );
  });
}

const blockEnv = () => ({
  PATH: `${join(dir, 'bin')}:${bins}:${process.env.PATH ?? ''}`,
  HOME: dir,
  DATABASE_URL: databaseUrl,
  ...vars,
});

/** The guide's blocks, run as written (`bash -e -o pipefail`, file:line on a failure). */
let shell: ShellRunner | undefined;
const runBlock = (block: Snippet, code?: string): Promise<Run> => shell!.run(block, code);

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

async function admin(...args: string[]): Promise<Record<string, string>> {
  const answer = await run(
    join(bins, 'partner-certification-service'),
    ['admin', ...args, '--json', '--data-dir', join(dir, 'data')],
    {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl },
    },
  );
  if (answer.code !== 0) throw new Error(`admin ${args[0]} failed: ${answer.stderr}`);
  return JSON.parse(answer.stdout) as Record<string, string>;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'production-guide-'));
  work = join(dir, 'work');
  await mkdir(work);
  shell = shellRunner({ cwd: work, env: blockEnv });
  postgres = await startPostgres();
  databaseUrl = await postgres.database('guide');

  // A webhook endpoint of the vendor's (the guide's "By webhook"), which answers 204 to everything.
  hooks = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      received.push({ headers: new Headers(request.headers as Record<string, string>), body });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => hooks!.listen(0, '127.0.0.1', resolve));
  const hooksPort = (hooks.address() as { port: number }).port;

  // The operator's side: a partner (its API key is the guide's $API_KEY), a reviewer, a webhook.
  partner = (await admin('add-partner', '--name', 'Acme Lending')) as typeof partner;
  reviewerCredential = (await admin('add-reviewer', '--name', 'Dana Reviewer')).credential!;
  hookSecret = (await admin('add-webhook', '--url', `http://127.0.0.1:${hooksPort}/hooks/partner-lending`))
    .secret!;
  // The vendor's plan, short enough for a test: listing loans, 2-s tokens (a 6-s journey renews them).
  await writeFile(
    join(dir, 'plan.json'),
    JSON.stringify({ id: 'guide-plan', operations: ['listLoans'], ttlSeconds: 2 }),
  );
  service = spawn(
    join(bins, 'partner-certification-service'),
    [
      'serve',
      '--port',
      '0',
      '--data-dir',
      join(dir, 'data'),
      '--plan',
      join(dir, 'plan.json'),
      '--register-max-age',
      '1',
      '--log-format',
      'text',
    ],
    {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  serviceUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${serviceOutput}`)), 60_000);
    const seen = (chunk: Buffer) => {
      serviceOutput += chunk.toString();
      const url = /listening on (http:\/\/\S+)/.exec(serviceOutput)?.[1];
      if (url) {
        clearTimeout(timer);
        resolve(url);
      }
    };
    service!.stdout?.on('data', seen);
    service!.stderr?.on('data', seen);
    service!.once('exit', (code) => reject(new Error(`serve exited ${code}: ${serviceOutput}`)));
  });
  vars.SERVICE = serviceUrl;
  vars.API_KEY = partner.apiKey;

  // The partner's own program, `./journey.sh`: the conformance suite's reference journey.
  await writeFile(
    join(work, 'journey.sh'),
    `#!/bin/sh\nJOURNEY_SECONDS=6 exec "${process.execPath}" "${referenceJourney}"\n`,
  );
  await chmod(join(work, 'journey.sh'), 0o755);
  // `npx -p @partner-lending/mock partner-mock …` as a partner types it, resolved to this workspace's
  // build instead of the registry: an npx on PATH that accepts exactly that form and nothing else.
  await mkdir(join(dir, 'bin'));
  await writeFile(
    join(dir, 'bin', 'npx'),
    `#!/bin/sh\n[ "$1" = -p ] && [ "$2" = @partner-lending/mock ] && [ "$3" = partner-mock ] || { echo "unexpected npx $*" >&2; exit 64; }\nshift 3\nexec "${join(bins, 'partner-mock')}" "$@"\n`,
  );
  await chmod(join(dir, 'bin', 'npx'), 0o755);

  // The TypeScript blocks, as modules inside apps/docs (so @partner-lending/sdk is the workspace build).
  const runDir = join(docsRoot, 'test-results', 'production-guide');
  await mkdir(runDir, { recursive: true });
  callFile = join(runDir, 'first-production-call.mjs');
  await writeFile(callFile, toTranspiled(callBlock.code));
  webhookFile = join(runDir, 'verify-webhook.mjs');
  await writeFile(webhookFile, toTranspiled(webhookBlock.code));
}, 120_000);

afterAll(async () => {
  shell?.stop();
  service?.kill('SIGTERM');
  await new Promise((resolve) =>
    service && service.exitCode === null ? service.once('exit', resolve) : resolve(0),
  );
  hooks?.close();
  await postgres?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const productionEnv = (
  addresses: { authUrl: string; baseUrl: string },
  client: (typeof guideClients)[0],
) => ({
  LENDING_PRODUCTION_AUTH_URL: addresses.authUrl,
  LENDING_PRODUCTION_BASE_URL: addresses.baseUrl,
  PARTNER_CLIENT_ID: client.clientId,
  PARTNER_CLIENT_SECRET: client.clientSecret,
});

describe('the production guide, every command as written', () => {
  let mockAddresses = { authUrl: '', baseUrl: '' };
  let client = guideClients[0]!;

  it('runs every shell block in order, from a practice run to the first production call and a revocation', async () => {
    // Where each block's outcome is checked, keyed by what the block does; every block must have one.
    const ran: string[] = [];
    for (const block of shellBlocks) {
      const code = block.code;
      // A reviewer approves before the decisions are listed (the guide's "The decision").
      if (code.includes('/api/decisions"') && !ran.includes('approved')) {
        const reviewer = await reviewerSession(serviceUrl, reviewerCredential);
        await reviewer.form(`/ui/runs/${vars.RUN_ID}`, `/ui/runs/${vars.RUN_ID}/decision`, {
          decision: 'approved',
          note: 'All operations covered; renewal clean.',
        });
        ran.push('approved');
      }
      // The production clients file (the guide's JSON) before the mock reads it.
      if (code.includes('--clients production-clients.json')) {
        const clients = JSON.parse(clientsBlock.code.replaceAll(placeholderPartner, partner.partnerId));
        await writeFile(join(work, 'production-clients.json'), JSON.stringify(clients, null, 2));
        client = clients[0];
      }
      const out = await runBlock(block);
      const where = `guides/${block.file}:${block.line}`;
      if (code.includes('"$SERVICE/api/runs" ')) {
        const practice = JSON.parse(await readFile(join(work, 'practice.json'), 'utf8'));
        expect(practice.id, where).toMatch(/^run_/);
        ran.push('practice');
      } else if (code.includes('partner-conformance client')) {
        const runId = /hosted run (run_[\w-]+)/.exec(out.stdout)?.[1];
        expect(runId, `${where}: ${out.stdout}${out.stderr}`).toBeDefined();
        vars.RUN_ID = runId!;
        expect(JSON.parse(await readFile(join(work, 'run.attestation.json'), 'utf8')).payloadType).toBe(
          'application/vnd.in-toto+json',
        );
        expect(await readFile(join(work, 'report.html'), 'utf8')).toContain('<html');
        expect(out.stdout).not.toContain(partner.apiKey);
        ran.push('certified');
      } else if (code.includes('/api/runs/$RUN_ID"')) {
        expect(JSON.parse(out.stdout), where).toMatchObject({ id: vars.RUN_ID, approvable: true });
        ran.push('approvable');
      } else if (code.includes('/api/decisions"')) {
        const listed = JSON.parse(out.stdout);
        expect(listed.decisions[0], where).toMatchObject({ runId: vars.RUN_ID, decision: 'approved' });
        expect(listed.production, where).toMatchObject({ status: 'active', expiring: false });
        vars.DECISION_ID = listed.decisions[0].id;
        ran.push('listed');
      } else if (code.includes('partner-conformance verify')) {
        expect(JSON.parse(await readFile(join(work, 'decision.json'), 'utf8')).payloadType).toBe(
          'application/vnd.in-toto+json',
        );
        expect(out.stdout, where).toContain(`decision holds: signed by`);
        expect(out.stdout, where).toContain(`decision approved on run ${vars.RUN_ID}`);
        expect(out.stdout, where).toMatch(/attestation SHA-256 [0-9a-f]{64}: the attestation given/);
        ran.push('verified');
      } else if (code.includes('add-register-reader')) {
        expect((await readFile(join(work, 'register.key'), 'utf8')).trim(), where).toMatch(/^\S{20,}$/);
        ran.push('register key');
      } else if (code.includes('--profile production')) {
        const authUrl = /auth server {2}(\S+)/.exec(out.stdout)?.[1];
        const baseUrl = /partner API {2}(\S+)/.exec(out.stdout)?.[1];
        expect(out.stdout, where).toMatch(/register {5}1 partner\(s\), issued /);
        expect(out.stdout).not.toContain((await readFile(join(work, 'register.key'), 'utf8')).trim());
        mockAddresses = { authUrl: authUrl!, baseUrl: baseUrl! };
        ran.push('production mock');
      } else {
        throw new Error(`${where}: a shell block this test does not know; say here what it must have done`);
      }
    }
    expect(ran).toEqual([
      'practice',
      'certified',
      'approvable',
      'approved',
      'listed',
      'verified',
      'register key',
      'production mock',
    ]);

    // 5. The first production call (the guide's TypeScript block) with the variables it names.
    const first = await firstCall(productionEnv(mockAddresses, client));
    expect(first.stderr).toBe('');
    expect(first.stdout.trim()).toBe('first production call: 5 loans');
    expect(first.code).toBe(0);

    // The vendor's webhook got partner.approved, and the guide's verifyWebhook accepts it.
    const verify = ((await import(webhookFile)) as { verifyWebhook: Verify }).verifyWebhook;
    const deadline = Date.now() + 30_000;
    while (!received.some((r) => r.body.includes('"partner.approved"')) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 100));
    const approved = received.find((r) => r.body.includes('"partner.approved"'));
    expect(approved, 'the partner.approved delivery').toBeDefined();
    expect(verify(hookSecret, approved!.headers, approved!.body)).toBe(true);
    expect(verify(`whsec_${randomBytes(24).toString('base64')}`, approved!.headers, approved!.body)).toBe(
      false,
    );

    // 6. A reviewer revokes; within the register's max-age (1 s here) the same call says why.
    const reviewer = await reviewerSession(serviceUrl, reviewerCredential);
    await reviewer.form(
      `/ui/partners/${partner.partnerId}/production`,
      `/ui/partners/${partner.partnerId}/revoke`,
      { decision: 'revoked', note: 'credentials leaked' },
    );
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const refused = await firstCall(productionEnv(mockAddresses, client));
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr.trim()).toMatch(
      new RegExp(
        `^not approved for production: partner ${partner.partnerId} is not approved for production: its approval was revoked \\(decision dec_[\\w-]+\\)\\. Certify your integration at ${serviceUrl.replace(/[.]/g, '\\.')} \\(a certification run, then a reviewer's approval\\), then ask again$`,
      ),
    );
    expect(refused.stderr).not.toContain(client.clientSecret);
    // The guide shows that line, with the vendor's addresses.
    const shown = only(
      'refusal (text)',
      (s) => s.language === 'text' && s.code.includes('not approved for production'),
    );
    expect(shown.code.trim()).toMatch(
      /^not approved for production: partner ptn_acme is not approved for production: its approval was revoked \(decision dec_…\)\. Certify your integration at https:\/\/\S+ \(a certification run, then a reviewer's approval\), then ask again$/,
    );
  }, 150_000);

  it('never falls back to the staging variables (control: a staging set-up alone does not reach production)', async () => {
    const run = await firstCall({
      PARTNER_AUTH_URL: mockAddresses.authUrl,
      PARTNER_BASE_URL: mockAddresses.baseUrl,
      PARTNER_CLIENT_ID: client.clientId,
      PARTNER_CLIENT_SECRET: client.clientSecret,
    });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('LENDING_PRODUCTION_AUTH_URL is not set');
  });

  it('a changed flag or path in a block fails the run, naming the guide’s line (the negative controls)', async () => {
    const broken: Array<[string, (code: string) => string]> = [
      ['partner-conformance verify', (code) => code.replace('--attestation ', '--attestation-file ')],
      ['"$SERVICE/api/runs" ', (code) => code.replace('"$SERVICE/api/runs"', '"$SERVICE/api/run"')],
      ['add-register-reader', (code) => code.replace('--name ', '--label ')],
      ['/api/decisions"', (code) => code.replace('Bearer $API_KEY', 'Bearer $APIKEY')],
    ];
    for (const [marker, change] of broken) {
      const block = shellBlocks.find((s) => s.code.includes(marker))!;
      const changed = change(block.code);
      expect(changed, marker).not.toBe(block.code);
      await expect(runBlock(block, changed), marker).rejects.toThrow(
        `guides/${block.file}:${block.line}: the guide's block exited with`,
      );
    }
    // And unchanged, the same blocks still pass (the controls fail for the change, not the set-up).
    await runBlock(shellBlocks.find((s) => s.code.includes('partner-conformance verify'))!);
  }, 90_000);
});

type Verify = (secret: string, headers: Headers, body: string, now?: number) => boolean;

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
