// The partner's commands against the mock and the local certification stage, run as the pages show
// them: "Certification" (05), "The mock" (06), "Fleet" (10), "Certify your integration" (11), the root
// README's and the conformance README's. Each block runs with `bash -e -o pipefail` in a temporary
// directory, only the placeholders the page documents replaced (the staging addresses by a real mock's,
// `your-client-id` by its client, `10.0.0.5` by 127.0.0.1, `./my-journey.sh` by a journey that exists),
// `npx -p @partner-lending/…` resolved to this workspace's build. A failing block names its page and line.
//
// The stand-in for a certifiable staging environment is the real mock with 5-second tokens (so the
// expiry check has a token that expires within its wait) and the suite's reserved foreign audience
// registered (so the API's audience check has a token for another audience); against the mock's defaults
// --certify is FAIL with those two checks not verified, which the negative control shows.
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RunningMock, startMock } from '@partner-lending/mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bins, type ShellRunner, shellRunner } from './helpers/guide-shell.js';
import {
  npxShim,
  repoRoot,
  runBlock,
  shellBlock,
  startServerBlock,
  substitute,
} from './helpers/markdown-shell.js';

const certificationGuide = 'apps/docs/guides/05-certification.md';
const mockGuide = 'apps/docs/guides/06-mock.md';
const clientGuide = 'apps/docs/guides/11-certify-your-integration.md';
const curlJourney = join(repoRoot, 'packages/certification-service/examples/curl-journey.sh');

let dir = '';
let work = '';
let staging: RunningMock;
let env: Record<string, string> = {};
let shell: ShellRunner;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'shell-blocks-mock-'));
  work = join(dir, 'work');
  await mkdir(work);
  await npxShim(join(dir, 'bin'));
  staging = await startMock({
    tokenTtlSeconds: 5,
    otherAudiences: ['https://foreign-api.conformance.invalid'],
  });
  // The guide reads the secrets from files under ~/.secrets: HOME is this test's directory.
  await mkdir(join(dir, '.secrets'));
  await writeFile(join(dir, '.secrets', 'partner-staging-secret'), staging.clients[1]!.clientSecret);
  await writeFile(join(dir, '.secrets', 'partner-staging-other-secret'), staging.clients[0]!.clientSecret);
  env = { PATH: `${join(dir, 'bin')}:${bins}:${process.env.PATH ?? ''}`, HOME: dir, NO_COLOR: '1' };
  shell = shellRunner({ cwd: work, env: () => env, timeoutMs: 120_000 });
}, 120_000);

afterAll(async () => {
  shell?.stop();
  await staging?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The staging placeholders of the certification pages, replaced by the mock's addresses. */
const stagingAddresses = (auth: string, api: string) =>
  [
    [auth, staging.authUrl],
    [api, staging.baseUrl],
  ] as const;

describe('"Certification" (guide 05), every command block as written', () => {
  it('the first run: the suite against its embedded mock passes', async () => {
    const block = await shellBlock(
      certificationGuide,
      'npx -p @partner-lending/conformance partner-conformance\n',
    );
    const { stdout } = await runBlock(shell, block);
    expect(stdout).toMatch(/^PASS/m);
  });

  it('certifies a staging environment with the credentials from ~/.secrets, writing the three reports', async () => {
    const block = await shellBlock(certificationGuide, 'export PARTNER_CLIENT_ID=your-client-id');
    const code = substitute(block, [
      ['your-client-id', staging.clients[1]!.clientId],
      ['other-client-id', staging.clients[0]!.clientId],
      ...stagingAddresses('https://auth.staging.example', 'https://partner-api.staging.example'),
      ['10.0.0.5', '127.0.0.1'],
    ]);
    const { stdout } = await runBlock(shell, block, code);
    expect(stdout).toMatch(/^PASS/m);
    expect(stdout).not.toContain(staging.clients[1]!.clientSecret);
    const report = JSON.parse(await readFile(join(work, 'conformance.json'), 'utf8'));
    expect(report.checks.length).toBeGreaterThan(30);
    expect(await readFile(join(work, 'conformance.xml'), 'utf8')).toContain('<testsuite');
    expect(await readFile(join(work, 'conformance.html'), 'utf8')).toContain('<html');
  }, 120_000);

  it('control: the same block against the mock with its 12-hour tokens stops with FAIL (exit 1), naming the line', async () => {
    const plain = await startMock();
    try {
      const block = await shellBlock(certificationGuide, 'export PARTNER_CLIENT_ID=your-client-id');
      const code = substitute(block, [
        ['your-client-id', plain.clients[1]!.clientId],
        ['other-client-id', plain.clients[0]!.clientId],
        ['https://auth.staging.example', plain.authUrl],
        ['https://partner-api.staging.example', plain.baseUrl],
        ['10.0.0.5', '127.0.0.1'],
      ]);
      // The secrets files hold the other mock's secrets: point them at this one's.
      const other = shellRunner({ cwd: work, env: () => env, timeoutMs: 120_000 });
      await writeFile(join(dir, '.secrets', 'partner-staging-secret'), plain.clients[1]!.clientSecret);
      await writeFile(join(dir, '.secrets', 'partner-staging-other-secret'), plain.clients[0]!.clientSecret);
      await expect(runBlock(other, block, code)).rejects.toThrow(
        new RegExp(`${block.file}:${block.line}: the block exited with 1[\\s\\S]*integrity-expired`),
      );
    } finally {
      await writeFile(join(dir, '.secrets', 'partner-staging-secret'), staging.clients[1]!.clientSecret);
      await writeFile(
        join(dir, '.secrets', 'partner-staging-other-secret'),
        staging.clients[0]!.clientSecret,
      );
      await plain.close();
    }
  }, 120_000);

  it('a reproduce line: the API refuses a token in the query string, and the answer is shown', async () => {
    const block = await shellBlock(certificationGuide, "curl -i -X GET 'https://partner-api.staging.example");
    const client = staging.clients[1]!;
    const answer = await fetch(`${staging.authUrl}/oauth/token`, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: client.clientId,
        client_secret: client.clientSecret,
        audience: staging.audience,
      }),
    });
    const { access_token: token } = (await answer.json()) as { access_token: string };
    const code = substitute(block, [
      ['https://partner-api.staging.example', staging.baseUrl],
      ['partner-123', client.partnerId],
    ]);
    const reproduce = shellRunner({ cwd: work, env: () => ({ ...env, TOKEN: token }) });
    const { stdout } = await runBlock(reproduce, block, code);
    expect(stdout).toMatch(/^HTTP\/1\.1 401/);
    expect(stdout).toMatch(/www-authenticate: Bearer/i);
  });
});

describe('"The mock" (guide 06): the command-line servers', () => {
  it('partner-mock --json prints one JSON line with the addresses and clients, and stops on SIGTERM', async () => {
    const block = await shellBlock(mockGuide, 'npx -p @partner-lending/mock partner-mock --json');
    const server = await startServerBlock(block, { cwd: work, env, ready: /\}\n/ });
    try {
      const line = JSON.parse(server.output.trim()) as { authUrl: string; clients: unknown[] };
      expect(line.authUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(line.clients.length).toBeGreaterThan(0);
      expect((await fetch(`${line.authUrl}/.well-known/jwks.json`)).status).toBe(200);
    } finally {
      await server.stop();
    }
  });

  it('a mock on fixed ports with 5-second tokens and the secrets shown (the ports: free ones here)', async () => {
    const block = await shellBlock(mockGuide, 'npx -p @partner-lending/mock partner-mock --port 8080');
    const [api, auth] = [await freePort(), await freePort()];
    const code = substitute(block, [
      ['--port 8080', `--port ${api}`],
      ['--auth-port 8081', `--auth-port ${auth}`],
    ]);
    const server = await startServerBlock(block, { code, cwd: work, env, ready: /Stop with Ctrl\+C/ });
    try {
      expect(server.output).toContain(`127.0.0.1:${api}`);
      expect(server.output).toContain(`127.0.0.1:${auth}`);
      expect(server.output).toMatch(/secret/i);
    } finally {
      await server.stop();
    }
  });
});

describe('"Fleet" (guide 10): the fleet key', () => {
  it('openssl rand -base64 32 prints a key of 32 random bytes', async () => {
    const block = await shellBlock('apps/docs/guides/10-fleet.md', 'openssl rand -base64 32');
    const { stdout } = await runBlock(shell, block);
    expect(Buffer.from(stdout.trim(), 'base64')).toHaveLength(32);
  });
});

describe('"Certify your integration" (guide 11): the shell journey, practice and judged again', () => {
  it('the journey saved as journey.sh runs under the stage; --judge re-judges its saved session offline', async () => {
    const script = await shellBlock(clientGuide, '#!/bin/sh');
    await writeFile(join(work, 'journey.sh'), script.code);
    const practice = await shellBlock(clientGuide, 'chmod +x journey.sh');
    // The guide's command as shown, plus --save-session for the next block (which says to save it).
    const { stdout } = await runBlock(
      shell,
      practice,
      substitute(practice, [['-- ./journey.sh', '--save-session session.json -- ./journey.sh']]),
    );
    expect(stdout).toMatch(/client-single-flight[^\n]*not verified/);
    expect(stdout).not.toMatch(/^\s*✗/m);
    const judge = await shellBlock(
      clientGuide,
      'npx -p @partner-lending/conformance partner-conformance client --judge',
    );
    // Not certifiable (the guide says why: it never creates anything): the block exits 1, the report written.
    await expect(runBlock(shell, judge)).rejects.toThrow(
      `${judge.file}:${judge.line}: the block exited with 1`,
    );
    expect(await readFile(join(work, 'review.html'), 'utf8')).toContain('<html');
  }, 120_000);
});

describe('the root README', () => {
  it('certifies a real environment (the … credentials and addresses: the stand-in staging mock)', async () => {
    const block = await shellBlock('README.md', 'PARTNER_CLIENT_ID=… PARTNER_CLIENT_SECRET=…');
    const code = substitute(block, [
      ['PARTNER_CLIENT_ID=…', `PARTNER_CLIENT_ID=${staging.clients[1]!.clientId}`],
      ['PARTNER_CLIENT_SECRET=…', `PARTNER_CLIENT_SECRET=${staging.clients[1]!.clientSecret}`],
      ...stagingAddresses('https://auth.example', 'https://partner-api.example'),
    ]);
    const { stdout } = await runBlock(shell, block, code);
    expect(stdout).toMatch(/^PASS/m);
    expect(await readFile(join(work, 'junit.xml'), 'utf8')).toContain('<testsuite');
  }, 120_000);

  it('certifies a journey by its traffic (./my-journey.sh: the shipped curl journey) — PASS, approvable', async () => {
    const block = await shellBlock(
      'README.md',
      'npx -p @partner-lending/conformance partner-conformance client --certify',
    );
    await writeFile(join(work, 'my-journey.sh'), `#!/bin/sh\nJOURNEY_SECONDS=21 exec sh "${curlJourney}"\n`);
    await chmod(join(work, 'my-journey.sh'), 0o755);
    const { stdout } = await runBlock(shell, block);
    expect(stdout).toMatch(/^PASS/m);
    expect(await readFile(join(work, 'report.html'), 'utf8')).toContain('<html');
  }, 120_000);

  it('from a clone: each line of the block is its own command (the mock, the conformance CLI, the service)', async () => {
    const block = await shellBlock('README.md', 'node packages/mock/bin/partner-mock.js --json');
    const lines = block.code.trim().split('\n');
    expect(lines).toHaveLength(3);
    const data = join(dir, 'from-clone');
    await mkdir(data);
    const fromClone = { cwd: repoRoot, env: { ...env } };
    const mock = await startServerBlock(block, { ...fromClone, code: lines[0]!, ready: /\}\n/ });
    await mock.stop();
    expect(JSON.parse(mock.output.trim()).baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:/);
    const help = shellRunner({ cwd: repoRoot, env: () => env });
    expect((await runBlock(help, block, lines[1]!)).stdout).toMatch(/partner-conformance/);
    // serve with its defaults, but a throwaway data directory and a free port instead of ./certification-data:8080.
    const port = await freePort();
    const service = await startServerBlock(block, {
      ...fromClone,
      code: `${lines[2]!.replace(/#.*$/, '')} --data-dir '${data}' --port ${port}`,
      env: { ...env, DATABASE_URL: '' },
      ready: /listening on http:\/\/127\.0\.0\.1:/,
    });
    await service.stop();
  }, 120_000);
});

describe('the conformance README', () => {
  it('the embedded mock, then a staging environment with the … credentials', async () => {
    const block = await shellBlock('packages/conformance/README.md', 'npx @partner-lending/conformance ');
    const [main, other] = [staging.clients[1]!, staging.clients[0]!];
    const code = substitute(block, [
      ['PARTNER_CLIENT_ID=…', `PARTNER_CLIENT_ID=${main.clientId}`],
      ['PARTNER_CLIENT_SECRET=…', `PARTNER_CLIENT_SECRET=${main.clientSecret}`],
      ['PARTNER_OTHER_CLIENT_ID=…', `PARTNER_OTHER_CLIENT_ID=${other.clientId}`],
      ['PARTNER_OTHER_CLIENT_SECRET=…', `PARTNER_OTHER_CLIENT_SECRET=${other.clientSecret}`],
      ...stagingAddresses('https://auth.staging.example', 'https://api.staging.example'),
      ['10.0.0.5', '127.0.0.1'],
    ]);
    const { stdout } = await runBlock(shell, block, code);
    expect(stdout.match(/^PASS/gm)).toHaveLength(2);
  }, 180_000);

  it('the client mode: a certification run, a practice run, any language, judged again offline', async () => {
    const block = await shellBlock(
      'packages/conformance/README.md',
      'npx -p @partner-lending/conformance partner-conformance client --certify',
    );
    // my-journey.mjs: the conformance package's own example journey (the SDK journey it certifies).
    const journey = join(repoRoot, 'packages/conformance/examples/journey.mjs');
    const code = substitute(block, [['node my-journey.mjs', `node '${journey}'`]]);
    await writeFile(join(work, 'journey.sh'), `#!/bin/sh\nJOURNEY_SECONDS=21 exec sh "${curlJourney}"\n`);
    await chmod(join(work, 'journey.sh'), 0o755);
    // Journeys run past the plan's short-lived phase (15 s), as every certification run must.
    const long = shellRunner({
      cwd: work,
      env: () => ({ ...env, JOURNEY_SECONDS: '21' }),
      timeoutMs: 240_000,
    });
    const { stdout } = await runBlock(long, block, code);
    expect(stdout.match(/^PASS/gm)?.length).toBeGreaterThanOrEqual(3);
    expect(JSON.parse(await readFile(join(work, 'session.json'), 'utf8')).stage).toBeDefined();
  }, 300_000);
});

async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
