// The root README's "From a clone" block, run as written: `pnpm pack:local sdk mock`, then `cd
// ../my-project && npm install ../toolkit/packed/….tgz`. Its placeholders are the README's own: `../toolkit`
// is the clone (here a link, under a throwaway folder of the system's temporary folder, to this
// repository) and `../my-project` a project beside it (made with `npm init -y`, as the README says). The
// block runs in the clone with `bash -e -o pipefail`; `pnpm pack:local` builds the packages through
// turbo (a cache hit when they are built) and writes `packed/` in the clone, which the test removes
// again when it was not there before. Then, in that project, the installed SDK lists loans of the
// installed mock, both resolved from the project's node_modules (their third-party dependencies from
// the npm registry, the workspace packages from the tarballs alone). Control: the same program in a
// project without the install fails, so it is the install that makes the call work.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shellRunner } from './helpers/guide-shell.js';
import { repoRoot, runBlock, shellBlock } from './helpers/markdown-shell.js';

const run = promisify(execFile);
const start = 'pnpm pack:local sdk mock';
const env = {
  ...process.env,
  NO_COLOR: '1',
  npm_config_update_notifier: 'false',
  npm_config_fund: 'false',
  npm_config_audit: 'false',
} as Record<string, string>;

/** An ES module that calls the installed mock with the installed SDK, saying where each was loaded from. */
const callProgram = `import { startMock } from '@partner-lending/mock';
import { createPartnerClient } from '@partner-lending/sdk';
const mock = await startMock();
try {
  const { clientId, clientSecret } = mock.clients[0];
  const client = createPartnerClient({ authUrl: mock.authUrl, baseUrl: mock.baseUrl, clientId, clientSecret });
  const page = await client.loans.list({ limit: 3 });
  console.log(JSON.stringify({
    loans: page.items.length,
    sdk: import.meta.resolve('@partner-lending/sdk'),
    mock: import.meta.resolve('@partner-lending/mock'),
    auth: import.meta.resolve('@partner-lending/auth'),
  }));
} finally {
  await mock.close();
}
`;

let dir = '';
const packedBefore = existsSync(join(repoRoot, 'packed'));
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'readme-pack-'));
  await symlink(repoRoot, join(dir, 'toolkit'));
  await mkdir(join(dir, 'my-project'));
  await run('npm', ['init', '-y'], { cwd: join(dir, 'my-project'), env });
});
afterAll(async () => {
  if (!packedBefore) await rm(join(repoRoot, 'packed'), { recursive: true, force: true });
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the README: install the SDK and the mock from a clone into a project beside it', () => {
  it('runs `pnpm pack:local sdk mock` and the npm install as written; the installed SDK calls the installed mock', async () => {
    const block = await shellBlock('README.md', start);
    // The clone is ../toolkit: the block runs there, reached by that name (bash keeps the logical
    // path in PWD, so `cd ../my-project` goes beside it).
    const toolkit = join(dir, 'toolkit');
    const shell = shellRunner({ cwd: toolkit, env: () => ({ ...env, PWD: toolkit }), timeoutMs: 540_000 });
    const { stdout } = await runBlock(shell, block);
    expect(stdout).toContain('sdk: npm install ./packed/sdk.tgz ./packed/auth.tgz ./packed/spec.tgz');
    expect(stdout).toContain('mock: npm install ./packed/mock.tgz ./packed/spec.tgz');

    const project = join(dir, 'my-project');
    const manifest = JSON.parse(await readFile(join(project, 'package.json'), 'utf8'));
    expect(Object.keys(manifest.dependencies ?? {}).sort()).toEqual([
      '@partner-lending/auth',
      '@partner-lending/mock',
      '@partner-lending/sdk',
      '@partner-lending/spec',
    ]);
    await writeFile(join(project, 'call.mjs'), callProgram);
    const called = await run(process.execPath, ['call.mjs'], { cwd: project, env, timeout: 60_000 });
    const answer = JSON.parse(called.stdout) as Record<string, string | number>;
    expect(answer.loans).toBe(3);
    for (const name of ['sdk', 'mock', 'auth'])
      expect(String(answer[name]), name).toContain(`file://${project}/node_modules/@partner-lending/`);
  }, 600_000);

  it('control: the same program in a project without the install fails (it is the install that works)', async () => {
    const bare = join(dir, 'bare-project');
    await mkdir(bare);
    await writeFile(join(bare, 'call.mjs'), callProgram);
    const failed = await run(process.execPath, ['call.mjs'], { cwd: bare, env, timeout: 60_000 }).catch(
      (error: { code?: number; stderr?: string }) => error,
    );
    expect((failed as { code?: number }).code).toBe(1);
    expect(String((failed as { stderr?: string }).stderr)).toMatch(
      /ERR_MODULE_NOT_FOUND[\s\S]*@partner-lending\/mock|Cannot find package '@partner-lending\/mock'/,
    );
  }, 60_000);

  it('control: the block with a tarball the pack did not write fails, naming the README and its line', async () => {
    const block = await shellBlock('README.md', start);
    const toolkit = join(dir, 'toolkit');
    const shell = shellRunner({ cwd: toolkit, env: () => ({ ...env, PWD: toolkit }), timeoutMs: 540_000 });
    // Only the install line, with one tarball misnamed (pack:local already ran in the test above).
    const install = block.code.split('\n')[1]!.replace('packed/mock.tgz', 'packed/mocks.tgz');
    await expect(runBlock(shell, block, install)).rejects.toThrow(
      `README.md:${block.line}: the block exited with`,
    );
  }, 120_000);
});
