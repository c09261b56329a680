import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { exchangeAttributes, otlpJson, postEvidence } from './support/evidence.js';
import { bin, runCommand, startServe } from './support/service.js';

// The command: admin add-evidence-reporter prints a key once and names the store it wrote to; serve
// takes that key at POST /evidence, and --evidence-retention-days is checked.
const dir = mkdtempSync(join(tmpdir(), 'pcs-evidence-cli-'));
const env = { DATABASE_URL: '', SIGNING_KEY_FILE: '' };
const command = (...args: string[]) =>
  runCommand(process.execPath, [bin, ...args, '--data-dir', join(dir, 'data')], { env });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('admin add-evidence-reporter', () => {
  it('prints a reporter id and key once, names the store on stderr, and serve takes the key', async () => {
    const added = await command('admin', 'add-evidence-reporter', '--name', 'gateway eu-1', '--json');
    expect(added.code).toBe(0);
    const { reporterId, key } = JSON.parse(added.stdout) as { reporterId: string; key: string };
    expect(reporterId).toMatch(/^evr_/);
    expect(key).toMatch(/^pcs_evidence_/);
    expect(added.stderr).toMatch(/wrote evidence reporter evr_\S+ to embedded/);
    expect(added.stderr).not.toContain(key);
    const partner = await command('admin', 'add-partner', '--name', 'Acme', '--json');
    const { partnerId } = JSON.parse(partner.stdout) as { partnerId: string };
    const serve = await startServe({
      cwd: dir,
      env,
      args: ['--data-dir', join(dir, 'data'), '--evidence-retention-days', '7'],
    });
    try {
      const body = otlpJson([{ at: Date.now(), attributes: exchangeAttributes(partnerId) }]);
      expect((await postEvidence(serve.url, body, { key })).status).toBe(200);
      // Control: a key it did not print is refused.
      expect((await postEvidence(serve.url, body, { key: `${key}x` })).status).toBe(401);
    } finally {
      await serve.stop();
    }
    expect(serve.output()).not.toContain(key);
  });

  it('refuses a missing name, a serve option, and a retention that is not a whole number of days', async () => {
    const noName = await command('admin', 'add-evidence-reporter');
    expect(noName.code).not.toBe(0);
    expect(noName.stderr).toMatch(/admin add-evidence-reporter needs --name NAME/);
    const serveFlag = await command(
      'admin',
      'add-evidence-reporter',
      '--name',
      'x',
      '--evidence-retention-days',
      '5',
    );
    expect(serveFlag.stderr).toMatch(/--evidence-retention-days is an option of serve, not of admin/);
    const zero = await command('serve', '--evidence-retention-days', '0');
    expect(zero.code).not.toBe(0);
    expect(zero.stderr).toMatch(/--evidence-retention-days takes a whole number from 1 to 36500, got "0"/);
  });
});
