import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bin, runCommand, startServe } from './support/service.js';

// `serve --on-regression notify|suspend`, through the built command.
const dir = mkdtempSync(join(tmpdir(), 'pcs-on-regression-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('serve --on-regression', () => {
  it('--help names it, its values and its default', async () => {
    const help = await runCommand(process.execPath, [bin, '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/--on-regression P[\s\S]*notify[\s\S]*suspend[\s\S]*\(default notify\)/);
  });

  it('refuses another value with exit 2, naming both it takes', async () => {
    const result = await runCommand(
      process.execPath,
      [bin, 'serve', '--port', '0', '--on-regression', 'pause'],
      {
        cwd: dir,
        env: { DATABASE_URL: '', SIGNING_KEY_FILE: '' },
        timeoutMs: 60_000,
      },
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--on-regression takes notify (announce a regression) or suspend');
    expect(result.stderr).toContain('got "pause"');
  }, 90_000);

  it('starts with suspend (control: the value is taken)', async () => {
    const serve = await startServe({
      cwd: dir,
      args: ['--data-dir', join(dir, 'data'), '--on-regression', 'suspend'],
    });
    try {
      expect((await fetch(`${serve.url}/healthz`)).status).toBe(200);
    } finally {
      expect(await serve.stop()).toBe(0);
    }
  }, 90_000);
});
