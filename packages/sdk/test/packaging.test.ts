// The package boundary as a partner meets it: pack sdk and mock with the workspace's dependencies (spec,
// auth) by `pnpm pack:local`'s script (pnpm pack, short names), install the tarballs with npm into a fresh
// project outside the workspace, os.tmpdir() (no workspace links; the workspace packages from the
// tarballs alone, third-party dependencies from the npm registry), run an ESM and a CJS consumer against the installed mock, and
// lint the published shape of every package with publint and @arethetypeswrong/cli.
// Needs the packages built (`pnpm build`; turbo's test task depends on build).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../../', import.meta.url));
const installed = ['spec', 'packages/auth', 'packages/sdk', 'packages/mock'];
const linted = ['packages/sdk', 'packages/auth', 'packages/mock', 'spec', 'packages/conformance'];
const env = { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', npm_config_update_notifier: 'false' };

let project = '';

const consumerEsm = `
import { startMock } from '@partner-lending/mock';
import { createPartnerClient, ScopeNotGrantedError } from '@partner-lending/sdk';
const mock = await startMock();
try {
  const [full, , readOnly] = mock.clients;
  const client = createPartnerClient({ authUrl: mock.authUrl, baseUrl: mock.baseUrl, clientId: full.clientId, clientSecret: full.clientSecret });
  let count = 0;
  for await (const _ of client.loans.iterate({ pageSize: 10 })) count++;
  const draft = await client.loanDrafts.create({ amount: 1 });
  const limited = createPartnerClient({ authUrl: mock.authUrl, baseUrl: mock.baseUrl, clientId: readOnly.clientId, clientSecret: readOnly.clientSecret });
  const refused = await limited.repayments.create({ amount: 1 }).catch((e) => e instanceof ScopeNotGrantedError);
  console.log(JSON.stringify({ format: 'esm', count, draft: typeof draft.id, refused }));
} finally {
  await mock.close();
}
`;

const consumerCjs = `
const { startMock } = require('@partner-lending/mock');
const { createPartnerClient, PermissionDeniedError } = require('@partner-lending/sdk');
(async () => {
  const mock = await startMock();
  try {
    const [full, other] = mock.clients;
    const client = createPartnerClient({ authUrl: mock.authUrl, baseUrl: mock.baseUrl, clientId: full.clientId, clientSecret: full.clientSecret });
    const page = await client.loans.list({ limit: 3 });
    const denied = await client.loans.list({ partnerId: other.partnerId }).catch((e) => e instanceof PermissionDeniedError);
    console.log(JSON.stringify({ format: 'cjs', count: page.items.length, denied }));
  } finally {
    await mock.close();
  }
})().catch((error) => { console.error(error); process.exitCode = 1; });
`;

// A partner's TypeScript: module augmentation of the loan and a create body, which must flow into
// list, iterate, pages and create. Compiles only when it does: `loan.amount` is `unknown` otherwise,
// and the @ts-expect-error lines need the declared fields.
const consumerTypes = `
import { createPartnerClient, type Loan, PartnerApiError } from '@partner-lending/sdk';

declare module '@partner-lending/sdk' {
  interface Loan {
    id: string;
    amount: number;
  }
  interface RepaymentInput {
    loanId: string;
    amount: number;
  }
}

const client = createPartnerClient();

export async function total(): Promise<number> {
  const page = await client.loans.list({ limit: 10 });
  const ids: string[] = page.items.map((loan) => loan.id);
  let sum = 0;
  for await (const loan of client.loans.iterate()) sum += loan.amount;
  for await (const each of client.loans.pages()) sum += each.items[0]?.amount ?? 0;
  await client.repayments.create({ loanId: ids[0] ?? 'loan-0001', amount: 1 });
  // @ts-expect-error amount is a number once declared
  await client.repayments.create({ loanId: 'loan-0001', amount: '1' });
  // @ts-expect-error loanId is required once declared
  await client.repayments.create({ amount: 1 });
  const { data, status, headers } = await client.loans.list().withResponse();
  const first: Loan | undefined = data.items[0];
  try {
    await client.loans.list();
  } catch (error) {
    if (error instanceof PartnerApiError) return error.code.length;
  }
  return sum + status + (first?.amount ?? 0) + (headers.get('x-total-count') === null ? 0 : 1);
}
`;

const tsconfig = (module: string, moduleResolution: string) =>
  JSON.stringify({
    compilerOptions: {
      module,
      moduleResolution,
      target: 'es2022',
      lib: ['es2022', 'dom', 'dom.asynciterable'],
      types: [],
      strict: true,
      noEmit: true,
      // The packages' own declarations are checked by attw below; this checks the consumer's code.
      skipLibCheck: true,
    },
    files: ['consumer-types.mts'],
  });

beforeAll(async () => {
  for (const dir of [...installed, ...linted]) {
    if (!existsSync(join(root, dir, 'dist/index.js'))) {
      throw new Error(`${dir}/dist is missing: run \`pnpm build\` at the repository root before this test.`);
    }
  }
  project = await mkdtemp(join(tmpdir(), 'partner-sdk-consumer-'));
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
  // The README's "from a clone" command: `pnpm pack:local` (its script, the build being done), tarballs with
  // short names whose workspace dependencies are each other's, then the npm install it prints.
  const packed = await run(
    process.execPath,
    [join(root, 'scripts/pack-local.mjs'), '--out', project, 'sdk', 'mock'],
    { cwd: project, env },
  );
  expect(packed.stdout).toContain('sdk: npm install ./sdk.tgz ./auth.tgz ./spec.tgz\n');
  const tarballs = (await readdir(project)).filter((name) => name.endsWith('.tgz')).sort();
  expect(tarballs).toEqual(['auth.tgz', 'mock.tgz', 'sdk.tgz', 'spec.tgz']);
  await run(
    'npm',
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--no-package-lock',
      'typescript@5.9.3',
      ...tarballs.map((name) => `./${name}`),
    ],
    {
      cwd: project,
      env,
    },
  );
  await writeFile(join(project, 'consumer.mjs'), consumerEsm);
  await writeFile(join(project, 'consumer.cjs'), consumerCjs);
  await writeFile(join(project, 'consumer-types.mts'), consumerTypes);
  await writeFile(join(project, 'tsconfig.nodenext.json'), tsconfig('nodenext', 'nodenext'));
  await writeFile(join(project, 'tsconfig.bundler.json'), tsconfig('esnext', 'bundler'));
}, 300_000);

afterAll(async () => {
  if (project) await rm(project, { recursive: true, force: true });
});

describe('installed from the tarballs', { timeout: 120_000 }, () => {
  it('packs the four packages and installs them without workspace links', async () => {
    const tarballs = (await readdir(project)).filter((name) => name.endsWith('.tgz')).sort();
    expect(tarballs).toEqual(['auth.tgz', 'mock.tgz', 'sdk.tgz', 'spec.tgz']);
    const { stdout } = await run('npm', ['ls', '--all', '--json'], { cwd: project, env });
    const tree = JSON.parse(stdout) as { dependencies: Record<string, { resolved?: string }> };
    // Each workspace package from its tarball, never from a registry (the SDK's auth and spec included).
    for (const name of ['sdk', 'auth', 'spec', 'mock'])
      expect(tree.dependencies[`@partner-lending/${name}`]?.resolved, name).toMatch(
        new RegExp(`^file:.*/${name}\\.tgz$`),
      );
    expect(stdout).not.toMatch(/"resolved": "https?:[^"]*@partner-lending/);
    expect(stdout).not.toContain('workspace:');
  });

  it('runs an ESM consumer against the installed mock', async () => {
    const { stdout } = await run('node', ['consumer.mjs'], { cwd: project, env, timeout: 60_000 });
    expect(JSON.parse(stdout)).toEqual({ format: 'esm', count: 25, draft: 'string', refused: true });
  });

  it('runs a CJS consumer against the installed mock', async () => {
    const { stdout } = await run('node', ['consumer.cjs'], { cwd: project, env, timeout: 60_000 });
    expect(JSON.parse(stdout)).toEqual({ format: 'cjs', count: 3, denied: true });
  });
});

describe('types in a consumer project', { timeout: 120_000 }, () => {
  const tsc = 'node_modules/typescript/bin/tsc';
  it.each(['nodenext', 'bundler'])(
    'module augmentation flows into list, iterate, pages and create under moduleResolution %s',
    async (resolution) => {
      const result = await run('node', [tsc, '-p', `tsconfig.${resolution}.json`], {
        cwd: project,
        env,
      }).catch((error: { stdout?: string; stderr?: string }) => error);
      expect(`${result.stdout ?? ''}${result.stderr ?? ''}`).toBe('');
    },
  );

  it('fails to compile without the augmentation (the check above is not vacuous)', async () => {
    const plain = consumerTypes.replace(/declare module[\s\S]*?\n}\n/, '');
    await writeFile(join(project, 'consumer-types.mts'), plain);
    try {
      const result = await run('node', [tsc, '-p', 'tsconfig.nodenext.json'], { cwd: project, env }).catch(
        (error: { stdout?: string }) => error,
      );
      expect(result.stdout).toMatch(/error TS/);
    } finally {
      await writeFile(join(project, 'consumer-types.mts'), consumerTypes);
    }
  });
});

describe('published shape', { timeout: 120_000 }, () => {
  it.each(linted)('publint finds nothing in %s', async (dir) => {
    const { stdout } = await run('pnpm', ['exec', 'publint', dir], { cwd: root, env });
    expect(stdout).toContain('All good!');
  });

  it.each(linted)('@arethetypeswrong/cli finds no problem in %s', async (dir) => {
    // The spec's data subpaths (openapi.yaml/json, operations.json) are files, not typed modules.
    const data =
      dir === 'spec' ? ['--exclude-entrypoints', 'openapi.yaml', 'openapi.json', 'operations.json'] : [];
    const { stdout } = await run('pnpm', ['exec', 'attw', '--pack', dir, '--format', 'ascii', ...data], {
      cwd: root,
      env,
    });
    expect(stdout).toContain('No problems found');
  });
});
