// The README blocks that need a partner a reviewer approved, run as written: the conformance README's
// "Verify an attestation" (an attestation with its session, then a decision with its attestation) and
// the mock README's production profile (a register reader key, then the production mock reading the
// service's register). Against real things on 127.0.0.1: `partner-certification-service serve` on a
// throwaway PostgreSQL (so that the operator's `admin` runs beside it, as the mock README says), a
// certification run under the default plan of the conformance package's examples/journey.mjs as
// shipped (no JOURNEY_SECONDS), a reviewer's approval through the reviewer pages' forms, and the
// decision downloaded as the README says. Only the placeholders the READMEs document are replaced: the
// service's address, and /var/lib/partner-mock/ by the test's folder. Each block runs with `bash -e -o
// pipefail`, the `npx -p …` form resolved to this workspace's build; a failure names the README and
// line. Controls: one byte of the decision changed fails the verify block; on the embedded store, with
// `serve` holding it, the mock README's block stops at `admin` (non-zero, naming the line) and no mock
// starts.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startPostgres,
  type ThrowawayPostgres,
} from '../../../packages/certification-service/test/support/postgres.mjs';
import {
  admin,
  runCommand,
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
import { reviewerSession } from './helpers/reviewer.js';

const conformanceReadme = 'packages/conformance/README.md';
const mockReadme = 'packages/mock/README.md';
const verifyStart = 'npx -p @partner-lending/conformance partner-conformance verify run.attestation.json';
const productionStart = 'set -o pipefail';
const journey = join(repoRoot, 'packages/conformance/examples/journey.mjs');

let dir = '';
let work = '';
let postgres: ThrowawayPostgres | undefined;
let databaseUrl = '';
let service: ServeProcess | undefined;
let partner: Record<string, string> = {};
let runId = '';
let certified = '';
const env = () => ({
  PATH: `${join(dir, 'bin')}:${bins}:${process.env.PATH ?? ''}`,
  HOME: dir,
  NO_COLOR: '1',
  DATABASE_URL: databaseUrl,
});

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'shell-blocks-approved-'));
  work = join(dir, 'work');
  await mkdir(work);
  await npxShim(join(dir, 'bin'));
  postgres = await startPostgres();
  databaseUrl = await postgres.database(`approved_${Date.now()}`);
  partner = await admin('add-partner', 'Acme Lending', { cwd: dir, env: { DATABASE_URL: databaseUrl } });
  const reviewer = await admin('add-reviewer', 'Dana Reviewer', {
    cwd: dir,
    env: { DATABASE_URL: databaseUrl },
  });
  service = await startServe({ cwd: dir, env: { DATABASE_URL: databaseUrl } });
  const url = service.url;

  // The partner's certification run of the example journey, as shipped, through the service.
  await writeFile(join(work, 'service-key.txt'), partner.apiKey!);
  const ran = await runCommand(
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
      process.execPath,
      journey,
    ],
    { cwd: work, env: { PATH: process.env.PATH ?? '', JOURNEY_SECONDS: undefined }, timeoutMs: 150_000 },
  );
  certified = `${ran.stdout}\n${ran.stderr}`;
  runId = /hosted run (run_[\w-]+)/.exec(ran.stdout)?.[1] ?? '';
  if (ran.code !== 0 || !runId)
    throw new Error(`the certification run failed (exit ${ran.code}):\n${certified.slice(-3000)}`);

  // A reviewer approves it at the run's page; the partner downloads the decision (the README's way).
  const session = await reviewerSession(url, reviewer.credential!);
  await session.form(`/ui/runs/${runId}`, `/ui/runs/${runId}/decision`, {
    decision: 'approved',
    note: 'Every operation and scenario covered.',
  });
  const auth = { authorization: `Bearer ${partner.apiKey}` };
  const listed = (await (await fetch(`${url}/api/decisions`, { headers: auth })).json()) as {
    decisions: Array<{ id: string; runId: string; decision: string }>;
  };
  const decision = listed.decisions.find((item) => item.runId === runId);
  if (decision?.decision !== 'approved') throw new Error(`no approval listed: ${JSON.stringify(listed)}`);
  const statement = await fetch(`${url}/api/decisions/${decision.id}/statement`, { headers: auth });
  if (statement.status !== 200) throw new Error(`the decision statement answered ${statement.status}`);
  await writeFile(join(work, 'decision.json'), await statement.text());
}, 300_000);

afterAll(async () => {
  await service?.stop();
  await postgres?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the example journey, as shipped, through the hosted service', () => {
  it('certifies under the default plan at its default length: PASS, approvable', async () => {
    const judged = await (
      await fetch(`${service!.url}/api/runs/${runId}`, {
        headers: { authorization: `Bearer ${partner.apiKey}` },
      })
    ).json();
    expect(judged, certified.slice(-2000)).toMatchObject({
      verdict: 'PASS',
      approvable: true,
      notApprovable: [],
      plan: { id: 'partner-lending-default-v2' },
    });
    expect(certified).toMatch(/over [\d.]+ s \(done\)/);
  });
});

describe('the conformance README: verify an attestation, then a decision', () => {
  it('runs the block as written (the service’s address for its placeholder): both hold', async () => {
    const block = await shellBlock(conformanceReadme, verifyStart);
    const code = substitute(block, [['https://certification.example', service!.url]]);
    const shell = shellRunner({ cwd: work, env });
    const { stdout } = await runBlock(shell, block, code);
    expect(stdout).toMatch(/verified/i);
    expect(stdout).toContain('decision holds: signed by');
    expect(stdout).toContain(`decision approved on run ${runId}`);
    expect(stdout).toMatch(/attestation SHA-256 [0-9a-f]{64}: the attestation given/);

    // Control: one byte of the signed decision changed (its note), and the same block fails, naming
    // the README's line.
    const decision = await readFile(join(work, 'decision.json'), 'utf8');
    const envelope = JSON.parse(decision) as { payload: string };
    const payload = Buffer.from(envelope.payload, 'base64').toString('utf8');
    expect(payload).toContain('scenario covered');
    envelope.payload = Buffer.from(payload.replace('scenario covered', 'scenario Covered')).toString(
      'base64',
    );
    await writeFile(join(work, 'decision.json'), JSON.stringify(envelope));
    try {
      await expect(runBlock(shell, block, code)).rejects.toThrow(
        `${block.file}:${block.line}: the block exited with 1`,
      );
    } finally {
      await writeFile(join(work, 'decision.json'), decision);
    }
  }, 120_000);
});

describe('the mock README: the production profile reads the service’s register', () => {
  /** The production clients: the approved partner's, and one of a partner the register does not list. */
  const writeClients = async (folder: string) => {
    const scopes = ['read:loans', 'create:loan_draft', 'create:journal_update', 'create:repayment'];
    const clients = [
      {
        partnerId: partner.partnerId,
        clientId: 'acme-production',
        clientSecret: 'prod-secret-change-me-0123456789',
        authorizedScopes: scopes,
      },
      {
        partnerId: 'ptn_never_approved',
        clientId: 'other-production',
        clientSecret: 'prod-secret-of-another-0123456789',
        authorizedScopes: scopes,
      },
    ];
    await writeFile(join(folder, 'production-clients.json'), JSON.stringify(clients, null, 2));
    return clients;
  };
  const token = (authUrl: string, audience: string, client: { clientId: string; clientSecret: string }) =>
    fetch(`${authUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: client.clientId,
        client_secret: client.clientSecret,
        audience,
      }),
    });

  it('runs the block as written on PostgreSQL beside serve: the approved partner gets a token, another is refused', async () => {
    const folder = join(work, 'production');
    await mkdir(folder);
    const clients = await writeClients(folder);
    const block = await shellBlock(mockReadme, productionStart);
    const code = substitute(block, [
      ['https://certify.example', service!.url],
      ['/var/lib/partner-mock/', `${folder}/`],
    ]);
    let mock: ServerBlock | undefined;
    try {
      mock = await startServerBlock(block, {
        code,
        cwd: folder,
        env: env(),
        ready: /Stop with Ctrl\+C/,
        timeoutMs: 60_000,
      });
      expect((await readFile(join(folder, 'register.key'), 'utf8')).trim()).toMatch(/^\S{20,}$/);
      expect(mock.output).toMatch(/register {5}1 partner\(s\), issued /);
      const authUrl = /auth server {2}(\S+)/.exec(mock.output)?.[1];
      const baseUrl = /partner API {2}(\S+)/.exec(mock.output)?.[1];
      expect(authUrl && baseUrl, mock.output).toBeTruthy();
      const granted = await token(authUrl!, baseUrl!, clients[0]!);
      expect(granted.status).toBe(200);
      expect(((await granted.json()) as { scope: string }).scope.split(' ').sort()).toEqual(
        [...clients[0]!.authorizedScopes].sort(),
      );
      const refused = await token(authUrl!, baseUrl!, clients[1]!);
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({ error: 'unauthorized_client' });
      // The replay floor is kept in the folder given for /var/lib/partner-mock/.
      expect(JSON.parse(await readFile(join(folder, 'register-state.json'), 'utf8')).format).toBe(
        'partner-mock-register-state/v1',
      );
    } finally {
      await mock?.stop();
    }
  }, 120_000);

  it('control: on the embedded store held by serve, the block stops at admin, naming its line, and starts no mock', async () => {
    const folder = join(dir, 'embedded');
    await mkdir(folder);
    await writeClients(folder);
    const embedded = await startServe({ cwd: folder });
    try {
      const block = await shellBlock(mockReadme, productionStart);
      const code = substitute(block, [
        ['https://certify.example', embedded.url],
        ['/var/lib/partner-mock/', `${folder}/`],
      ]);
      await expect(
        startServerBlock(block, {
          code,
          cwd: folder,
          env: { ...env(), DATABASE_URL: '' },
          ready: /Stop with Ctrl\+C/,
          timeoutMs: 60_000,
        }),
      ).rejects.toThrow(new RegExp(`^${mockReadme}:${block.line}: the block exited with [1-9]`));
      expect((await readFile(join(folder, 'register.key'), 'utf8')).trim()).toBe('');
    } finally {
      await embedded.stop();
    }
  }, 120_000);
});
