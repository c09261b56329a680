import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';
import { bin, runCommand } from './support/service.js';

// Every admin subcommand says on stderr which store it wrote to, as the operator and production guides
// promise: a reader or webhook added in a shell whose DATABASE_URL differs from serve's lands in a store
// nobody serves, and this line is how the operator sees it.

let postgres: ThrowawayPostgres;
const dir = mkdtempSync(join(tmpdir(), 'pcs-admin-wrote-'));
beforeAll(async () => {
  postgres = await startPostgres();
});
afterAll(async () => {
  await postgres?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const stores = [
  ['embedded', /to embedded PGlite in \S+/] as const,
  ['PostgreSQL', /to PostgreSQL at 127\.0\.0\.1:\d+/] as const,
];

describe.each(stores)('on %s', (store, where) => {
  const admin = async (...args: string[]) =>
    runCommand(process.execPath, [bin, 'admin', ...args, '--data-dir', join(dir, store)], {
      env: {
        DATABASE_URL: store === 'embedded' ? '' : await postgres.database(`admin_wrote_${Date.now()}`),
        SIGNING_KEY_FILE: '',
        SECRETS_KEY_FILE: '',
      },
    });

  it('add-register-reader and add-webhook print "wrote … to <store>" on stderr, with --json too, and the secret only on stdout', async () => {
    for (const json of [[], ['--json']]) {
      const reader = await admin('add-register-reader', '--name', 'production token endpoint', ...json);
      expect(reader.code, reader.stderr).toBe(0);
      const readerLine = reader.stderr.match(
        /partner-certification-service: wrote register reader (rdr_\S+) (.*)/,
      );
      expect(readerLine, reader.stderr).not.toBeNull();
      expect(readerLine?.[2]).toMatch(where);
      expect(reader.stdout).toContain(readerLine?.[1]);
      expect(reader.stderr).not.toMatch(/pcs_register_/);

      const hook = await admin('add-webhook', '--url', 'https://console.example.com/hooks', ...json);
      expect(hook.code, hook.stderr).toBe(0);
      const hookLine = hook.stderr.match(/partner-certification-service: wrote webhook (whk_\S+) (.*)/);
      expect(hookLine, hook.stderr).not.toBeNull();
      expect(hookLine?.[2]).toMatch(where);
      expect(hook.stdout).toContain(hookLine?.[1]);
      expect(hook.stderr).not.toMatch(/whsec_/);
    }
  });

  it('control: a refused command writes nothing and says it wrote nothing', async () => {
    const refused = await admin('add-register-reader', '--name', '   ');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--name takes 1 to 100 printable characters/);
    expect(refused.stderr).not.toMatch(/wrote/);
    const hook = await admin('add-webhook', '--url', 'ftp://example.com/');
    expect(hook.code).toBe(2);
    expect(hook.stderr).not.toMatch(/wrote/);
  });
});
