import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openEmbedded } from '../src/index.js';
import { bin, runCommand } from './support/service.js';

const dir = mkdtempSync(join(tmpdir(), 'pcs-prod-cli-'));
const env = { DATABASE_URL: '', SIGNING_KEY_FILE: '' };
const admin = (...args: string[]) =>
  runCommand(process.execPath, [bin, 'admin', ...args, '--data-dir', join(dir, 'data')], { env });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('admin add-webhook and add-register-reader', () => {
  it('print their secret once as JSON, store only a hash or a sealed copy, and refuse bad input', async () => {
    const reader = await admin('add-register-reader', '--name', 'production token endpoint', '--json');
    expect(reader.code, reader.stderr).toBe(0);
    const { readerId, key } = JSON.parse(reader.stdout);
    expect(readerId).toMatch(/^rdr_/);
    expect(key).toMatch(/^pcs_register_/);
    const hook = await admin(
      'add-webhook',
      '--url',
      'https://console.example.com/hooks',
      '--events',
      'partner.approved,partner.revoked',
      '--json',
    );
    expect(hook.code, hook.stderr).toBe(0);
    const { webhookId, secret } = JSON.parse(hook.stdout);
    expect(webhookId).toMatch(/^whk_/);
    expect(secret).toMatch(/^whsec_/);
    const human = await admin('add-webhook', '--url', 'http://127.0.0.1:9/hooks');
    expect(human.stdout).toMatch(
      /webhook whk_\S+ added for partner\.approved, .*run\.judged, partner\.regressed, partner\.suspended, partner\.reinstated\.\nSigning secret \(shown once/,
    );

    for (const [args, message] of [
      [['add-webhook', '--url', 'ftp://example.com/'], /--url takes an http\(s\) URL/],
      [
        ['add-webhook', '--url', 'https://example.com/', '--events', 'partner.approved,partner.exploded'],
        /unknown: "partner\.exploded"/,
      ],
      [['add-webhook'], /needs --url URL/],
      [['add-webhook', '--url', 'https://example.com/', '--name', 'x'], /not --name/],
      [['add-register-reader'], /needs --name NAME/],
      [
        ['add-register-reader', '--name', 'x', '--url', 'https://example.com/'],
        /options of admin add-webhook/,
      ],
      [['add-register-reader', '--name', 'x', '--register-max-age', '5'], /option of serve/],
    ] as const) {
      const refused = await admin(...args);
      expect(refused.code, args.join(' ')).toBe(2);
      expect(refused.stderr).toMatch(message);
    }

    const db = await openEmbedded(join(dir, 'data'));
    try {
      const [stored] = await db.query<{ key_hash: string }>(
        'SELECT key_hash FROM register_readers WHERE id = $1',
        [readerId],
      );
      expect(stored!.key_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(stored!.key_hash).not.toContain(key);
      const [hookRow] = await db.query<{ secret_sealed: string; events: string[] }>(
        'SELECT secret_sealed, events FROM webhooks WHERE id = $1',
        [webhookId],
      );
      expect(hookRow!.secret_sealed.startsWith('v1.')).toBe(true);
      expect(hookRow!.secret_sealed).not.toContain(secret.slice(6));
      expect(hookRow!.events).toEqual(['partner.approved', 'partner.revoked']);
      const audit = await db.query<{ action: string }>(
        "SELECT action FROM audit_log WHERE action IN ('webhook.added', 'register-reader.added')",
      );
      expect(audit).toHaveLength(3);
    } finally {
      await db.close();
    }
  });
});

describe('serve --webhook-retry-schedule', () => {
  const serve = (...args: string[]) =>
    runCommand(process.execPath, [bin, 'serve', '--port', '0', '--data-dir', join(dir, 'serve'), ...args], {
      env,
      timeoutMs: 30_000,
    });
  it('refuses a malformed schedule at start, saying the expected form (the valid one: the outage test)', async () => {
    for (const value of ['', '5,,30', '0,5', '5,x', '5,604801', Array(31).fill('1').join(',')]) {
      const refused = await serve('--webhook-retry-schedule', value);
      expect(refused.code, value).toBe(2);
      expect(refused.stderr).toContain(
        '--webhook-retry-schedule takes 1 to 30 comma-separated delays in seconds, each from 1 to 604800',
      );
    }
    const admin = await runCommand(
      process.execPath,
      [
        bin,
        'admin',
        'add-partner',
        '--name',
        'x',
        '--webhook-retry-schedule',
        '5',
        '--data-dir',
        join(dir, 'data'),
      ],
      { env },
    );
    expect(admin.code).toBe(2);
    expect(admin.stderr).toContain('--webhook-retry-schedule is an option of serve, not of admin');
  });
});
