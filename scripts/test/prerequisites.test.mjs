// The prerequisites list as a contributor meets it: `pnpm test` stops before any test when the machine
// lacks something the selected projects need, naming it and its install command; it does not stop when
// the thing is there; and a user who cannot install is told what to run, within seconds.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { onPath, prerequisites, projects } from '../prerequisites.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bare = mkdtempSync(join(tmpdir(), 'prerequisites-path-'));
chmodSync(bare, 0o755); // read by `nobody` below
// A PATH with node, and apt-get / sudo where the machine has them, but none of the test tools.
for (const command of ['node', 'apt-get', 'sudo']) {
  const found = onPath(command);
  if (found) symlinkSync(found, join(bare, command));
}
afterAll(() => rmSync(bare, { recursive: true, force: true }));

function run(args, env = {}, user) {
  const started = Date.now();
  const childEnv = { ...process.env, PATH: bare, ...env };
  delete childEnv.REDIS_SERVER;
  const argv = user
    ? [onPath('runuser') ?? '/usr/sbin/runuser', '-u', user, '--', process.execPath, ...args]
    : [process.execPath, ...args];
  const result = spawnSync(argv[0], argv.slice(1), {
    cwd: root,
    env: childEnv,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { ...result, seconds: (Date.now() - started) / 1000 };
}

describe('the prerequisites of the tests', () => {
  it('every project is known and every prerequisite names a Debian package and the projects that need it', () => {
    for (const item of prerequisites) {
      expect(item.apt.length, item.id).toBeGreaterThan(0);
      expect(item.projects.length, item.id).toBeGreaterThan(0);
      for (const project of item.projects) expect(projects, item.id).toContain(project);
    }
  });

  it('pnpm test without redis-server on PATH stops before any test, naming it and its install command', () => {
    const result = run(['scripts/test.mjs', '--project', 'token-store-redis']);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('- redis-server:');
    expect(result.stderr).toContain('apt-get install -y redis-server');
    expect(result.stderr).toContain('no test was run');
    // Nothing ran: not the linter, not the build, not vitest.
    expect(result.stdout).not.toContain('▶');
    expect(result.stdout.trim().split('\n').at(-1)).toBe('0 passed, 1 failed');
    // What the token store's tests do not need is not asked for.
    expect(result.stderr).not.toContain('chromium');
    expect(result.seconds).toBeLessThan(30);
  });

  it('the same check passes where the tool is (the stop above is not the check failing everything)', () => {
    const redis = onPath('redis-server');
    expect(redis, 'this test needs redis-server on the PATH (pnpm prerequisites --install)').toBeTruthy();
    const result = run(['scripts/prerequisites.mjs', '--project', 'token-store-redis'], {
      REDIS_SERVER: redis,
      PATH: `${dirname(redis)}:${bare}`,
    });
    expect(result.stdout).toContain('✓ redis-server');
    expect(result.status).toBe(0);
  });

  it('a project that needs nothing but Node passes on the bare PATH', () => {
    const result = run(['scripts/prerequisites.mjs', '--project', 'sdk']);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('Node and npm alone run:');
  });

  it('an unknown project is a usage error that lists the projects', () => {
    const result = run(['scripts/prerequisites.mjs', '--project', 'sdkk']);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('no project named sdkk: the projects are spec, auth, sdk');
  });

  it('--install by a user who cannot install stops within seconds, naming every missing tool and the command', () => {
    // As root (CI), the check runs as `nobody`, who has neither root nor sudo; otherwise as this user,
    // on a PATH where apt-get cannot be used either way.
    const asRoot = process.getuid?.() === 0;
    const result = run(['scripts/prerequisites.mjs', '--install'], {}, asRoot ? 'nobody' : undefined);
    expect(result.status, result.stderr).toBe(1);
    expect(result.stderr).toMatch(
      /Nothing was installed: (installing needs root or passwordless sudo|this machine has no apt-get)/,
    );
    // Every tool found through PATH is missing on this one (those found at a fixed path, such as
    // /usr/bin/chromium, are not: they are here).
    for (const name of ['redis-server', 'curl', 'openssl', 'go', 'ruby-oauth2', 'util-linux'])
      expect(result.stderr).toContain(`- ${name}:`);
    expect(result.stderr).toMatch(/apt-get install -y .*redis-server.*/);
    expect(result.stdout).not.toContain('▶ installing');
    expect(result.seconds).toBeLessThan(30);
  });
});
