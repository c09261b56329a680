import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const bin = fileURLToPath(new URL('../bin/partner-conformance.js', import.meta.url));
const dist = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

function run(args: string[]) {
  if (!existsSync(dist))
    throw new Error('dist/cli.js is missing: build first (pnpm --filter @partner-lending/conformance build)');
  return spawnSync(process.execPath, [bin, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, NO_COLOR: '1' },
    timeout: 60_000,
  });
}

describe('bin/partner-conformance.js (the built CLI, as a process)', () => {
  it('tests the embedded mock and exits 0', () => {
    const result = run(['--only', 'token-no-store,bearer-valid-token']);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('target   embedded mock (deployed)');
    expect(result.stdout).toContain('2 checks: 2 passed, 0 failed, 0 skipped, 0 errored');
    expect(result.stdout).not.toContain('\x1b[');
  });

  it('exits 2 with one line on stderr for a bad flag', () => {
    const result = run(['--bogus']);
    expect(result.status).toBe(2);
    expect(result.stderr).toBe(
      'partner-conformance: unknown option --bogus; run partner-conformance --help for the flags\n',
    );
    expect(result.stdout).toBe('');
  });
});
