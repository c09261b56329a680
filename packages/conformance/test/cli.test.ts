import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { closedPortUrl } from './helpers.js';

const bin = fileURLToPath(new URL('../bin/partner-conformance.js', import.meta.url));
const dist = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

function run(args: string[], env: Record<string, string> = {}) {
  if (!existsSync(dist))
    throw new Error('dist/cli.js is missing: build first (pnpm --filter @partner-lending/conformance build)');
  return spawnSync(process.execPath, [bin, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, NO_COLOR: '1', ...env },
    timeout: 60_000,
  });
}

describe('bin/partner-conformance.js (the built CLI, as a process)', () => {
  it('tests the embedded mock and exits 0', () => {
    const result = run(['--only', 'token-no-store,bearer-valid-token']);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('target   embedded mock (deployed)');
    expect(result.stdout).toContain('2 checks: 2 passed, 0 failed, 0 not verified, 0 errored');
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

  it('exits 2 with one line on stderr when the credentials are missing', () => {
    const result = run(['--auth-url', 'https://auth.example.com', '--base-url', 'https://api.example.com']);
    expect(result.status).toBe(2);
    expect(result.stderr).toBe(
      'partner-conformance: PARTNER_CLIENT_ID and PARTNER_CLIENT_SECRET must be set to test https://api.example.com (credentials come from the environment, never from flags)\n',
    );
    expect(result.stdout).toBe('');
  });

  it('exits 3 with a one-line diagnosis when the target cannot be reached, the secret not in it', async () => {
    const url = await closedPortUrl();
    const result = run(['--auth-url', url, '--base-url', url], {
      PARTNER_CLIENT_ID: 'cli-client',
      PARTNER_CLIENT_SECRET: 'cli-secret-0123456789',
    });
    expect(result.status).toBe(3);
    expect(result.stderr).toMatch(
      /^partner-conformance: Cannot reach the token endpoint at http:\/\/127\.0\.0\.1:\d+\/oauth\/token: [^\n]*ECONNREFUSED[^\n]*\n$/,
    );
    expect(`${result.stdout}${result.stderr}`).not.toContain('cli-secret-0123456789');
  });
});
