// The package as a partner installs it: pack auth and token-store-redis with `pnpm pack`, install the
// tarballs with npm into an empty project outside the workspace (redis and jose from the npm
// registry), and run an ESM and a CJS consumer that share a token through a real redis-server.
// Then publint and @arethetypeswrong/cli on the package. Needs the packages built (`pnpm build`).
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, startRedis } from './support/redis-server.mjs';
import { CLIENT_ID, CLIENT_SECRET, startTokenServer, type TokenServer } from './support/token-server.mjs';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../../', import.meta.url));
const packed = ['packages/auth', 'packages/token-store-redis'];
const env = { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', npm_config_update_notifier: 'false' };
const version = (dir: string) =>
  (JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as { version: string }).version;
const encryptionKey = randomBytes(32).toString('base64');

let project = '';
let redis: RedisServer;
let server: TokenServer;

const consumerEsm = `
import { createTokenProvider } from '@partner-lending/auth';
import { createRedisTokenStore, RedisTokenStoreError } from '@partner-lending/token-store-redis';
const store = createRedisTokenStore({ url: process.env.REDIS_URL });
const provider = createTokenProvider({
  tokenUrl: process.env.TOKEN_URL, audience: process.env.AUDIENCE,
  clientId: process.env.CLIENT_ID, clientSecret: process.env.CLIENT_SECRET, store,
});
const tokens = await Promise.all(Array.from({ length: 20 }, () => provider.getToken()));
const bad = (() => { try { createRedisTokenStore({ url: process.env.REDIS_URL, encryptionKey: 'short' }); } catch (e) { return e instanceof RedisTokenStoreError && e.code; } })();
console.log(JSON.stringify({ format: 'esm', distinct: new Set(tokens.map((t) => t.accessToken)).size, bad }));
await store.close();
`;

const consumerCjs = `
const { createHash } = require('node:crypto');
const { createTokenProvider } = require('@partner-lending/auth');
const { createRedisTokenStore } = require('@partner-lending/token-store-redis');
(async () => {
  const store = createRedisTokenStore({ url: process.env.REDIS_URL });
  const provider = createTokenProvider({
    tokenUrl: process.env.TOKEN_URL, audience: process.env.AUDIENCE,
    clientId: process.env.CLIENT_ID, clientSecret: process.env.CLIENT_SECRET, store,
  });
  const token = await provider.getToken();
  console.log(JSON.stringify({ format: 'cjs', digest: createHash('sha256').update(token.accessToken).digest('hex') }));
  await store.close();
})().catch((error) => { console.error(error); process.exitCode = 1; });
`;

beforeAll(async () => {
  for (const dir of packed) {
    if (!existsSync(join(root, dir, 'dist/index.js'))) {
      throw new Error(`${dir}/dist is missing: run \`pnpm build\` at the repository root before this test.`);
    }
  }
  redis = await startRedis();
  server = await startTokenServer();
  project = await mkdtemp(join(tmpdir(), 'partner-token-store-consumer-'));
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
  for (const dir of packed) {
    await run('pnpm', ['pack', '--pack-destination', project], { cwd: join(root, dir), env });
  }
  const tarballs = (await readdir(project))
    .filter((name) => name.endsWith('.tgz'))
    .map((name) => `./${name}`);
  await run('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock', ...tarballs], {
    cwd: project,
    env,
  });
  await writeFile(join(project, 'consumer.mjs'), consumerEsm);
  await writeFile(join(project, 'consumer.cjs'), consumerCjs);
}, 300_000);

afterAll(async () => {
  if (project) await rm(project, { recursive: true, force: true });
  await server?.close();
  await redis?.stop();
});

const consumerEnv = () => ({
  ...env,
  REDIS_URL: redis.url,
  TOKEN_URL: server.tokenUrl,
  AUDIENCE: server.audience,
  CLIENT_ID,
  CLIENT_SECRET,
  PARTNER_TOKEN_STORE_KEY: encryptionKey,
});

describe('installed from the tarballs', { timeout: 120_000 }, () => {
  it('installs without workspace links; auth is a peer dependency, redis the only dependency', async () => {
    const manifest = JSON.parse(
      readFileSync(join(project, 'node_modules/@partner-lending/token-store-redis/package.json'), 'utf8'),
    ) as { dependencies: Record<string, string>; peerDependencies: Record<string, string> };
    expect(Object.keys(manifest.dependencies)).toEqual(['redis']);
    expect(manifest.peerDependencies['@partner-lending/auth']).toBe('>=0.1.0 <1');
    const { stdout } = await run('npm', ['ls', '--all', '--json'], { cwd: project, env });
    expect(stdout).not.toContain('workspace:');
    const tree = JSON.parse(stdout) as { dependencies: Record<string, { resolved?: string }> };
    expect(tree.dependencies['@partner-lending/token-store-redis']?.resolved).toMatch(
      new RegExp(`^file:.*partner-lending-token-store-redis-${version('packages/token-store-redis')}\\.tgz$`),
    );
  });

  it('an ESM consumer shares one token among 20 callers through the installed store and a real Redis', async () => {
    const before = server.tokenRequests();
    const { stdout, stderr } = await run('node', ['consumer.mjs'], {
      cwd: project,
      env: consumerEnv(),
      timeout: 60_000,
    });
    expect(JSON.parse(stdout)).toEqual({ format: 'esm', distinct: 1, bad: 'ERR_INVALID_ENCRYPTION_KEY' });
    expect(server.tokenRequests() - before).toBe(1);
    expect(stderr).not.toContain('PARTNER_TOKEN_STORE_UNENCRYPTED'); // the key came from the environment
  });

  it('a CJS consumer (another process) gets the token the ESM one stored, without a token request', async () => {
    const before = server.tokenRequests();
    const { stdout } = await run('node', ['consumer.cjs'], {
      cwd: project,
      env: consumerEnv(),
      timeout: 60_000,
    });
    const digest = createHash('sha256')
      .update(server.issued.at(-1) ?? '')
      .digest('hex');
    expect(JSON.parse(stdout)).toEqual({ format: 'cjs', digest });
    expect(server.tokenRequests()).toBe(before);
  });
});

describe('published shape', { timeout: 120_000 }, () => {
  it('publint finds nothing', async () => {
    const { stdout } = await run('pnpm', ['exec', 'publint', 'packages/token-store-redis'], {
      cwd: root,
      env,
    });
    expect(stdout).toContain('All good!');
  });

  it('@arethetypeswrong/cli finds no problem', async () => {
    const { stdout } = await run(
      'pnpm',
      ['exec', 'attw', '--pack', 'packages/token-store-redis', '--format', 'ascii'],
      { cwd: root, env },
    );
    expect(stdout).toContain('No problems found');
  });
});
