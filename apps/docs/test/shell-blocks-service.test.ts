// The operator's and the reviewer's commands, run as the pages show them: "Operate the certification
// service" (13), "Review and approve" (14), the service's README and the mock's production profile, and
// the verify commands of "Certification" (05). Each block runs with `bash -e -o pipefail` in a fresh
// directory with the built `partner-certification-service`, `partner-conformance` and `partner-mock` on
// PATH, on both stores where it touches storage: the embedded PGlite (`DATABASE_URL` empty) and a
// throwaway PostgreSQL. Only the placeholders the pages document are replaced: `--host 0.0.0.0` by
// 127.0.0.1, port 8080 and the example public URLs by a free port on 127.0.0.1, the `…` of a database URL
// or of "your other flags", and the example paths under /etc, /var/lib by the test's directory. A block
// that fails names its page and line.
import { execFile } from 'node:child_process';
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  freePort,
  startPostgres,
  type ThrowawayPostgres,
} from '../../../packages/certification-service/test/support/postgres.mjs';
import {
  type ServeProcess,
  startServe,
} from '../../../packages/certification-service/test/support/service.js';
import { bins, shellRunner } from './helpers/guide-shell.js';
import {
  npxShim,
  repoRoot,
  runBlock,
  type ServerBlock,
  shellBlock,
  startServerBlock,
  substitute,
} from './helpers/markdown-shell.js';

const operatorGuide = 'apps/docs/guides/13-operate-the-certification-service.md';
const serviceReadme = 'packages/certification-service/README.md';
const curlJourney = join(repoRoot, 'packages/certification-service/examples/curl-journey.sh');
const serviceBin = join(bins, 'partner-certification-service');

let postgres: ThrowawayPostgres;
let dir = '';
beforeAll(async () => {
  postgres = await startPostgres();
  dir = await mkdtemp(join(tmpdir(), 'shell-blocks-service-'));
  await npxShim(join(dir, 'bin'));
}, 300_000);
afterAll(async () => {
  await postgres?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const stores = ['embedded', 'PostgreSQL'] as const;
const wrote = { embedded: /to embedded PGlite in /, PostgreSQL: /to PostgreSQL at 127\.0\.0\.1:\d+/ };

describe.each(stores)('"Operate the certification service" (guide 13) on %s', (store) => {
  let work = '';
  let databaseUrl = '';
  const env = () => ({
    PATH: `${join(dir, 'bin')}:${bins}:${process.env.PATH ?? ''}`,
    HOME: dir,
    NO_COLOR: '1',
    DATABASE_URL: databaseUrl,
  });
  /** The public-address placeholders of a serve line, replaced by a free port on 127.0.0.1. */
  const address = async (publicUrl = 'https://certify.partner-lending.example') => {
    const port = await freePort();
    return {
      port,
      url: `http://127.0.0.1:${port}`,
      pairs: (code: string) =>
        [
          ...(code.includes('--host 0.0.0.0') ? [['--host 0.0.0.0', '--host 127.0.0.1'] as const] : []),
          ...(code.includes('--port 8080') ? [['--port 8080', `--port ${port}`] as const] : []),
          [
            publicUrl,
            `http://127.0.0.1:${port}${code.includes('--port 8080') ? '' : ` --port ${port}`}`,
          ] as const,
        ] as const,
    };
  };
  const serve = async (file: string, start: string, extra: Array<readonly [string, string]> = []) => {
    const block = await shellBlock(file, start);
    const where = await address(file === serviceReadme ? 'https://certify.example.com' : undefined);
    const code = substitute(block, [...extra, ...where.pairs(block.code)]);
    const server = await startServerBlock(block, {
      code,
      cwd: work,
      env: env(),
      ready: /listening on http:\/\/127\.0\.0\.1:\d+/,
      timeoutMs: 180_000,
    });
    return { server, url: where.url, block };
  };

  beforeAll(async () => {
    work = join(dir, store);
    await mkdir(work);
    databaseUrl = store === 'embedded' ? '' : await postgres.database(`guide13_${Date.now()}`);
  });

  let apiKey = '';
  it('Start it: add a partner and a reviewer (each saying which store it wrote to), then serve', async () => {
    const { server, url } = await serve(operatorGuide, 'partner-certification-service admin add-partner');
    try {
      expect(server.output).toMatch(new RegExp(`wrote partner \\S+ ${wrote[store].source}`));
      expect(server.output).toMatch(new RegExp(`wrote reviewer \\S+ ${wrote[store].source}`));
      apiKey = /API key \(shown once[^)]*\): (\S+)/.exec(server.output)?.[1] ?? '';
      expect(apiKey).toMatch(/^pcs_key_/);
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
    } finally {
      await server.stop();
    }
  }, 300_000);

  it('the attestation key: openssl genpkey, then (PostgreSQL) serve with DATABASE_URL and SIGNING_KEY_FILE', async () => {
    const genpkey = await shellBlock(operatorGuide, 'openssl genpkey -algorithm ed25519');
    await runBlock(shellRunner({ cwd: work, env }), genpkey);
    expect(await readFile(join(work, 'attestation-key.pem'), 'utf8')).toContain('PRIVATE KEY');
    if (store !== 'PostgreSQL') return;
    const { server, url } = await serve(operatorGuide, 'export DATABASE_URL=postgres://certify:…', [
      ['postgres://certify:…@db.internal:5432/certify', databaseUrl],
      ['/etc/partner-certification/attestation-key.pem', join(work, 'attestation-key.pem')],
    ]);
    try {
      expect(server.output).not.toMatch(/generated an Ed25519 attestation key/);
      const { keys } = (await (await fetch(`${url}/.well-known/jwks.json`)).json()) as { keys: unknown[] };
      expect(keys.length).toBeGreaterThan(0);
    } finally {
      await server.stop();
    }
  }, 300_000);

  it('the certification plan: plan.json written, serve names it (… : this test’s address flags)', async () => {
    const block = await shellBlock(operatorGuide, "cat > plan.json <<'JSON'");
    const where = await address();
    const code = substitute(block, [
      ['--plan plan.json …', `--plan plan.json --host 127.0.0.1 --port ${where.port}`],
    ]);
    const server = await startServerBlock(block, {
      code,
      cwd: work,
      env: env(),
      ready: /listening on http:/,
    });
    try {
      expect(server.output).toMatch(/staging-2026/);
    } finally {
      await server.stop();
    }
  }, 300_000);

  it.runIf(store === 'PostgreSQL')(
    'PostgreSQL, one instance: serve with a journal directory',
    async () => {
      const { server } = await serve(operatorGuide, 'partner-certification-service serve --journal-dir', [
        ['/var/lib/partner-certification/journal', join(work, 'journal')],
      ]);
      await server.stop();
      expect(server.output).toMatch(/journal/);
    },
    120_000,
  );

  it('the register reader and a webhook: each added, saying which store it wrote to', async () => {
    const shell = shellRunner({ cwd: work, env });
    const reader = await runBlock(
      shell,
      await shellBlock(operatorGuide, 'partner-certification-service admin add-register-reader'),
    );
    expect(reader.stdout).toMatch(/Register key \(shown once/);
    expect(reader.stderr).toMatch(new RegExp(`wrote register reader rdr_\\S+ ${wrote[store].source}`));
    const hook = await runBlock(
      shell,
      await shellBlock(operatorGuide, 'partner-certification-service admin add-webhook'),
    );
    expect(hook.stdout).toMatch(
      /webhook whk_\S+ added for partner\.approved, partner\.revoked, approval\.expired/,
    );
    expect(hook.stderr).toMatch(new RegExp(`wrote webhook whk_\\S+ ${wrote[store].source}`));
  }, 300_000);

  it('traces: serve exports its spans over OTLP/HTTP to the endpoint given (a receiver on 127.0.0.1)', async () => {
    const received: string[] = [];
    const receiver: Server = createServer((request, response) => {
      received.push(`${request.method} ${request.url}`);
      request.resume();
      request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const { port } = receiver.address() as { port: number };
    const block = await shellBlock(operatorGuide, 'export OTEL_EXPORTER_OTLP_ENDPOINT=');
    const where = await address();
    const code = substitute(block, [
      ['http://otel-collector.internal:4318', `http://127.0.0.1:${port}`],
      ['serve …', `serve --host 127.0.0.1 --port ${where.port}`],
    ]);
    let server: ServerBlock | undefined;
    try {
      server = await startServerBlock(block, { code, cwd: work, env: env(), ready: /listening on http:/ });
      expect((await fetch(`${where.url}/api/runs`)).status).toBe(401);
      await server.stop(); // a stop flushes the spans not yet sent
      expect(received).toContain('POST /v1/traces');
    } finally {
      await server?.stop();
      receiver.close();
    }
  }, 300_000);

  it('the service README: add a partner and a reviewer, serve; a partner’s run with curl alone, finished', async () => {
    const data = join(work, 'readme');
    await mkdir(data);
    const { server, url } = await serve(serviceReadme, 'partner-certification-service admin add-partner');
    try {
      const key = /API key \(shown once[^)]*\): (\S+)/.exec(server.output)?.[1];
      expect(key).toMatch(/^pcs_key_/);
      const block = await shellBlock(serviceReadme, 'run=$(curl -sS --fail-with-body');
      const partner = shellRunner({ cwd: work, env: () => ({ ...env(), SERVICE: url, API_KEY: key! }) });
      const { stdout } = await runBlock(partner, block);
      // No journey ran (the block leaves it to the reader): judged, and not approvable.
      expect(JSON.parse(stdout)).toMatchObject({ verdict: 'FAIL', approvable: false });
      // Control: without SERVICE the block stops at once, saying what to set.
      const bare = shellRunner({ cwd: work, env: () => ({ ...env(), API_KEY: key! }) });
      await expect(runBlock(bare, block)).rejects.toThrow(
        new RegExp(
          `${block.file}:${block.line}: the block exited with 1[\\s\\S]*SERVICE: the service address`,
        ),
      );
    } finally {
      await server.stop();
    }
  }, 180_000);
});

describe('verifying what the service signed: guides 14 and 05, offline', () => {
  let service: ServeProcess;
  let url = '';
  let work = '';
  beforeAll(async () => {
    work = join(dir, 'verify');
    await mkdir(work);
    const added = await promisify(execFile)(
      serviceBin,
      ['admin', 'add-partner', '--name', 'Acme', '--json'],
      {
        cwd: work,
        env: { PATH: process.env.PATH ?? '', DATABASE_URL: '' },
      },
    );
    const { apiKey } = JSON.parse(added.stdout) as { apiKey: string };
    service = await startServe({ cwd: work, env: { DATABASE_URL: '' } });
    url = service.url;
    // A certified run through the service (guide 12's one command), its attestation and session saved.
    await writeFile(join(work, 'journey.sh'), `#!/bin/sh\nJOURNEY_SECONDS=21 exec sh "${curlJourney}"\n`);
    await chmod(join(work, 'journey.sh'), 0o755);
    await writeFile(join(work, 'service-key.txt'), apiKey);
    await promisify(execFile)(
      join(bins, 'partner-conformance'),
      [
        'client',
        '--service',
        url,
        '--service-key-file',
        'service-key.txt',
        '--certify',
        '--attestation',
        'run.attestation.json',
        '--save-session',
        'run.session.json',
        '--',
        './journey.sh',
      ],
      { cwd: work, env: { PATH: process.env.PATH ?? '' }, timeout: 150_000 },
    );
  }, 240_000);
  afterAll(async () => {
    await service?.stop();
  });

  it('guide 14: verify run.attestation.json with the service’s published keys (its address: this service)', async () => {
    const block = await shellBlock(
      'apps/docs/guides/14-review-and-approve.md',
      'partner-conformance verify run.attestation.json',
    );
    const code = substitute(block, [['https://certify.partner-lending.example', url]]);
    const shell = shellRunner({ cwd: work, env: () => ({ PATH: `${bins}:${process.env.PATH ?? ''}` }) });
    const { stdout } = await runBlock(shell, block, code);
    expect(stdout).toMatch(/verified/i);
    // Control: one byte of the session changed, and the same block fails, naming the line.
    const session = await readFile(join(work, 'run.session.json'), 'utf8');
    await writeFile(join(work, 'run.session.json'), session.replace('"', ' "'));
    try {
      await expect(runBlock(shell, block, code)).rejects.toThrow(
        `${block.file}:${block.line}: the block exited with 1`,
      );
    } finally {
      await writeFile(join(work, 'run.session.json'), session);
    }
  }, 60_000);

  it('guide 05: verify attestation.json with a saved JWKS and the session', async () => {
    await copyFile(join(work, 'run.attestation.json'), join(work, 'attestation.json'));
    await copyFile(join(work, 'run.session.json'), join(work, 'session.json'));
    await writeFile(join(work, 'jwks.json'), await (await fetch(`${url}/.well-known/jwks.json`)).text());
    const block = await shellBlock(
      'apps/docs/guides/05-certification.md',
      'npx -p @partner-lending/conformance partner-conformance verify',
    );
    const shell = shellRunner({
      cwd: work,
      env: () => ({ PATH: `${join(dir, 'bin')}:${bins}:${process.env.PATH ?? ''}` }),
    });
    expect((await runBlock(shell, block)).stdout).toMatch(/verified/i);
  }, 60_000);
});
