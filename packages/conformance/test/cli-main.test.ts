import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMock } from '@partner-lending/mock';
import { describe, expect, it } from 'vitest';
import { main } from '../src/cli-main.js';
import { closedPortUrl, sink } from './helpers.js';

function io(env: Record<string, string | undefined> = {}, overrides = {}) {
  const stdout = sink(false);
  const stderr = sink(false);
  return { stdout, stderr, env, overrides };
}

describe('partner-conformance (main)', () => {
  it('exit 0 against the embedded mock, writing the three reports without secrets', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conformance-cli-'));
    const streams = io();
    const code = await main(
      [
        '--report-json',
        join(dir, 'r.json'),
        '--report-junit',
        join(dir, 'r.xml'),
        '--report-html',
        join(dir, 'r.html'),
      ],
      streams,
    );
    expect(streams.stderr.text()).toBe('');
    expect(code).toBe(0);
    expect(streams.stdout.text()).toContain('PASS: every must check passed (exit 0)');
    const json = JSON.parse(readFileSync(join(dir, 'r.json'), 'utf8'));
    expect(json.schemaVersion).toBe(1);
    expect(json.summary.failed + json.summary.errored).toBe(0);
    const all =
      ['r.json', 'r.xml', 'r.html'].map((file) => readFileSync(join(dir, file), 'utf8')).join('') +
      streams.stdout.text();
    expect(all).not.toMatch(/eyJ[\w-]+\.eyJ[\w-]+\.[\w-]{10,}/);
    expect((readFileSync(join(dir, 'r.xml'), 'utf8').match(/<testcase /g) ?? []).length).toBe(
      json.checks.length,
    );
  });

  it('exit 1 when a must check fails', async () => {
    const streams = io({}, { mock: { faults: ['token-omit-no-store'] } });
    expect(await main(['--only', 'token-no-store'], streams)).toBe(1);
    expect(streams.stdout.text()).toContain('✗ token-no-store [must, RFC 6749 §5.1]');
  });

  it('exit 2 for usage errors, in one line', async () => {
    const streams = io();
    expect(await main(['--only', 'nope'], streams)).toBe(2);
    expect(streams.stderr.text()).toMatch(/^partner-conformance: --only: unknown check id nope\. [^\n]*\n$/);
  });

  it('exit 2 for refused credentials, with a clear message and no stack trace or secret', async () => {
    const mock = await startMock();
    try {
      const streams = io({
        PARTNER_CLIENT_ID: mock.clients[0]!.clientId,
        PARTNER_CLIENT_SECRET: 'not-the-secret-123',
      });
      expect(await main(['--auth-url', mock.authUrl, '--base-url', mock.baseUrl], streams)).toBe(2);
      expect(streams.stderr.text()).toBe(
        `partner-conformance: The token endpoint ${mock.tokenUrl} refused the client credentials (401 invalid_client). Check PARTNER_CLIENT_ID and PARTNER_CLIENT_SECRET: they come from the partner administration console of this environment.\n`,
      );
    } finally {
      await mock.close();
    }
  });

  it('exit 3 when the target cannot be reached', async () => {
    const url = await closedPortUrl();
    const streams = io({ PARTNER_CLIENT_ID: 'id', PARTNER_CLIENT_SECRET: 'secret-value' });
    expect(await main(['--auth-url', url, '--base-url', url], streams)).toBe(3);
    expect(streams.stderr.text()).toMatch(
      /^partner-conformance: Cannot reach the token endpoint at .*\(ECONNREFUSED\)\. Check --auth-url and that the service is running\.\n$/,
    );
  });

  it('--help and --version exit 0', async () => {
    const streams = io();
    expect(await main(['--help'], streams)).toBe(0);
    expect(streams.stdout.text()).toContain('Usage: partner-conformance');
    expect(await main(['--version'], streams)).toBe(0);
  });
});
