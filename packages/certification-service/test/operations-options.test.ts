import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bin, runCommand } from './support/service.js';

const dir = mkdtempSync(join(tmpdir(), 'pcs-ops-options-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const serve = (args: string[], env: Record<string, string> = {}) =>
  runCommand(process.execPath, [bin, 'serve', '--port', '0', ...args], {
    cwd: dir,
    env: { DATABASE_URL: '', SIGNING_KEY_FILE: '', ...env },
    timeoutMs: 60_000,
  });

describe('serve options for operators', () => {
  it('--help lists them with their defaults', async () => {
    const help = await runCommand(process.execPath, [bin, '--help']);
    expect(help.code).toBe(0);
    for (const option of ['--retain-days N', '--metrics-port N', '--metrics-host H', '--log-format F'])
      expect(help.stdout).toContain(option);
    expect(help.stdout).toContain('OTEL_EXPORTER_OTLP_ENDPOINT');
  });

  it.each([
    [['--retain-days', '0'], /--retain-days takes a whole number from 1 to 36500, got "0"/],
    [['--metrics-port', '70000'], /--metrics-port takes a whole number from 0 to 65535/],
    [['--metrics-host', '0.0.0.0'], /--metrics-host needs --metrics-port N/],
    [['--log-format', 'xml'], /--log-format takes json or text, got "xml"/],
  ])('refuses %j with exit 2 and what to do', async (args, message) => {
    const result = await serve(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
  });

  it('refuses an OTLP protocol it does not speak, rather than export nothing', async () => {
    const result = await serve([], {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /OTEL_EXPORTER_OTLP_PROTOCOL is "grpc".*set it to http\/json or leave it unset/,
    );
  });

  it('admin refuses them as options of serve', async () => {
    const result = await runCommand(
      process.execPath,
      [bin, 'admin', 'add-partner', '--name', 'X', '--retain-days', '30'],
      { cwd: dir, env: { DATABASE_URL: '' } },
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--retain-days is an option of serve, not of admin');
  });
});
