// The quick start exactly as the guide shows it, in a project made the way a newcomer makes one
// (`npm init -y`, which writes "type": "commonjs") outside the repository: the SDK installed from the
// clone's tarballs as the guide's "From a clone" says (`pnpm pack:local sdk`'s script, then npm install
// of sdk, auth and spec together; their third-party dependencies and tsx from the npm registry), the
// guide's first snippet saved under the name the guide gives, a .env with the four variables (pointing
// at the mock), and the guide's `sh` block that runs it, through the guide-block runner (a failure names
// guides/01-quick-start.md and the block's line).
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type RunningMock, startMock } from '@partner-lending/mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { docsRoot } from './helpers/build-site.js';
import { guideBlocks, shellRunner } from './helpers/guide-shell.js';

const run = promisify(execFile);
const repo = join(docsRoot, '..', '..');
const env = { ...process.env, NO_COLOR: '1', npm_config_update_notifier: 'false', npm_config_fund: 'false' };
const guide = await readFile(join(docsRoot, 'guides', '01-quick-start.md'), 'utf8');
const quickStart = await guideBlocks('quick-start');

/** The file name the guide says to save the first snippet as, the snippet, and the command that runs it. */
function firstCall(): { file: string; code: string; command: string } {
  const file = /Save this as `([^`]+)`/.exec(guide)?.[1];
  const code = /Save this as[^\n]*\n\n```ts run\n([\s\S]*?)```/.exec(guide)?.[1];
  const command = /```sh\n(npx tsx [^\n]+)\n```/.exec(guide)?.[1];
  if (!file || !code || !command)
    throw new Error('the quick start no longer has "Save this as", its snippet and the npx tsx line');
  return { file, code, command };
}

let project = '';
let mock: RunningMock;
beforeAll(async () => {
  mock = await startMock();
  project = await mkdtemp(join(tmpdir(), 'quick-start-'));
  await run('npm', ['init', '-y'], { cwd: project, env });
  const packed = await run(
    process.execPath,
    [join(repo, 'scripts/pack-local.mjs'), '--out', 'packed', 'sdk'],
    {
      cwd: project,
      env,
    },
  );
  const install = /sdk: npm install (.+)\n/.exec(packed.stdout)?.[1];
  expect(install).toBe('./packed/sdk.tgz ./packed/auth.tgz ./packed/spec.tgz');
  await run('npm', ['install', '--no-audit', ...install!.split(' ')], { cwd: project, env });
  await run('npm', ['install', '--no-audit', '--save-dev', 'tsx@4.23.15'], { cwd: project, env });
}, 300_000);
afterAll(async () => {
  await mock?.close();
  if (project) await rm(project, { recursive: true, force: true });
});

describe('the quick start, as written', () => {
  it('runs in a fresh npm init -y project (type commonjs) and lists loans', async () => {
    const manifest = JSON.parse(await readFile(join(project, 'package.json'), 'utf8'));
    expect(manifest.type ?? 'commonjs').toBe('commonjs');
    const { file, code, command } = firstCall();
    await writeFile(join(project, file), code);
    const client = mock.clients[0]!;
    await writeFile(
      join(project, '.env'),
      `PARTNER_AUTH_URL=${mock.authUrl}\nPARTNER_BASE_URL=${mock.baseUrl}\nPARTNER_CLIENT_ID=${client.clientId}\nPARTNER_CLIENT_SECRET=${client.clientSecret}\n`,
    );
    const block = quickStart.shellBlocks.find((each) => each.code.trim() === command);
    if (!block) throw new Error(`guides/01-quick-start.md: no sh block is exactly "${command}"`);
    const shell = shellRunner({ cwd: project, env: () => env as Record<string, string>, timeoutMs: 120_000 });
    const { stdout } = await shell.run(block);
    expect(stdout).toContain('first page of loans:');
    expect(stdout).toMatch(/items: \[/);
  }, 180_000);

  it('the same snippet saved as .ts in that project is refused (the guide names .mts for a reason)', async () => {
    const { code, command } = firstCall();
    await writeFile(join(project, 'first-call.ts'), code);
    const result = await run('sh', ['-c', command.replace(/\S+\.mts\b/, 'first-call.ts')], {
      cwd: project,
      env,
      timeout: 120_000,
    }).catch((error: { stderr?: string }) => error);
    expect(String((result as { stderr?: string }).stderr)).toMatch(/await/i);
  }, 180_000);
});
