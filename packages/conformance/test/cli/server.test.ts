import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCliArgs } from '../../src/cli/server.js';
import { ConformanceError } from '../../src/errors.js';

const env = { PARTNER_CLIENT_ID: 'id-123', PARTNER_CLIENT_SECRET: 'secret-456' };
const remote = ['--auth-url', 'https://auth.example', '--base-url', 'https://api.example'];

function usageError(argv: string[], environment: Record<string, string | undefined> = env): string {
  try {
    parseCliArgs(argv, environment);
  } catch (error) {
    expect(error).toBeInstanceOf(ConformanceError);
    expect((error as ConformanceError).code).toBe('ERR_USAGE');
    return (error as ConformanceError).message;
  }
  throw new Error('expected a usage error');
}

describe('parseCliArgs', () => {
  it('defaults to the embedded mock', () => {
    expect(parseCliArgs([], {})).toEqual({ options: {}, reports: {}, help: false, version: false });
    expect(
      parseCliArgs(['--target', 'mock'], { PARTNER_AUTH_URL: 'https://x', PARTNER_BASE_URL: 'https://y' })
        .options,
    ).toEqual({});
  });

  it('reads a target from flags, credentials from the environment', () => {
    const dir = mkdtempSync(join(tmpdir(), 'conformance-'));
    const { options, reports } = parseCliArgs(
      [
        ...remote,
        '--audience',
        'https://aud',
        '--expect-scopes',
        'read:loans,create:repayment',
        '--allow-writes',
        '--max-expiry-wait',
        '0',
        '--only',
        'token-no-store, scope-order',
        '--skip',
        'scope-claim',
        '--report-json',
        join(dir, 'r.json'),
      ],
      env,
    );
    expect(options).toEqual({
      authUrl: 'https://auth.example',
      baseUrl: 'https://api.example',
      audience: 'https://aud',
      clientId: 'id-123',
      clientSecret: 'secret-456',
      expectScopes: ['read:loans', 'create:repayment'],
      allowWrites: true,
      maxExpiryWaitSeconds: 0,
      only: ['token-no-store', 'scope-order'],
      skip: ['scope-claim'],
    });
    expect(reports.json).toBe(join(dir, 'r.json'));
  });

  it('takes the target from PARTNER_* variables when no flag names one', () => {
    const { options } = parseCliArgs([], {
      ...env,
      PARTNER_AUTH_URL: 'https://a',
      PARTNER_BASE_URL: 'https://b',
      PARTNER_AUDIENCE: 'https://c',
    });
    expect(options).toMatchObject({ authUrl: 'https://a', baseUrl: 'https://b', audience: 'https://c' });
  });

  it('refuses bad usage with one clear line', () => {
    expect(usageError(['--client-secret', 'x'])).toBe(
      'unknown option --client-secret; run partner-conformance --help for the flags',
    );
    expect(usageError(['extra'])).toBe(
      'unexpected argument "extra"; run partner-conformance --help for the flags',
    );
    expect(usageError(['--target', 'prod'])).toBe(
      '--target accepts only "mock" (the embedded mock); to test a service give --auth-url and --base-url',
    );
    expect(usageError(['--target', 'mock', '--auth-url', 'https://a'])).toBe(
      '--target mock cannot be combined with --auth-url or --base-url',
    );
    expect(usageError(['--auth-url', 'https://a'])).toBe(
      '--auth-url needs --base-url (or PARTNER_BASE_URL) too',
    );
    expect(usageError(remote, { PARTNER_CLIENT_ID: 'x' })).toBe(
      'PARTNER_CLIENT_SECRET must be set to test https://api.example (credentials come from the environment, never from flags)',
    );
    expect(usageError(['--max-expiry-wait', '-1'])).toBe(
      '--max-expiry-wait needs a value (for a value starting with "-", write --max-expiry-wait=VALUE)',
    );
    expect(usageError(['--max-expiry-wait=-1'])).toMatch(/^--max-expiry-wait must be a whole number/);
    expect(usageError(['--audience'])).toBe(
      '--audience needs a value (for a value starting with "-", write --audience=VALUE)',
    );
    expect(usageError(['--max-expiry-wait', 'soon'])).toBe(
      '--max-expiry-wait must be a whole number of seconds from 0 to 86400, got "soon"',
    );
    expect(usageError(['--expect-scopes', ' , '])).toBe(
      '--expect-scopes needs at least one scope, e.g. "read:loans create:loan_draft"',
    );
    // A missing directory is created when the report is written; a file in the way is refused.
    expect(parseCliArgs(['--report-html', '/nonexistent-dir/r.html'], {}).reports.html).toBe(
      '/nonexistent-dir/r.html',
    );
    expect(usageError(['--report-html', `${process.execPath}/r.html`])).toBe(
      `--report-html: ${process.execPath} is a file, so the report cannot go under it; choose another path`,
    );
  });
});

describe('parseCliArgs: a second partner, certification, listening, and hostile input', () => {
  it('reads --other-partner-id, --certify, --listen and a second client from the environment', () => {
    const { options } = parseCliArgs(
      [...remote, '--other-partner-id', 'partner-b', '--certify', '--listen', '10.0.0.5'],
      { ...env, PARTNER_OTHER_CLIENT_ID: 'other-id', PARTNER_OTHER_CLIENT_SECRET: 'other-secret' },
    );
    expect(options).toMatchObject({
      otherPartnerId: 'partner-b',
      certify: true,
      listen: '10.0.0.5',
      otherClientId: 'other-id',
      otherClientSecret: 'other-secret',
    });
    expect(usageError([...remote], { ...env, PARTNER_OTHER_CLIENT_ID: 'other-id' })).toBe(
      "PARTNER_OTHER_CLIENT_SECRET is missing: a second partner's client needs both PARTNER_OTHER_CLIENT_ID and PARTNER_OTHER_CLIENT_SECRET",
    );
    expect(usageError([...remote, '--other-partner-id', 'a/b'])).toMatch(
      /^--other-partner-id must be a partner identifier .*; got "a\/b"$/,
    );
    expect(usageError([...remote, '--listen', 'user@host'])).toMatch(
      /^--listen needs a host name or IP address/,
    );
  });

  it('refuses a URL with credentials in one line that does not echo the password (exit 2)', () => {
    for (const [flag, argv, environment] of [
      [
        '--auth-url',
        ['--auth-url', 'https://user:hunter2-pw@auth.example', '--base-url', 'https://api.example'],
        env,
      ],
      [
        '--base-url',
        ['--auth-url', 'https://auth.example', '--base-url', 'https://user:hunter2-pw@api.example'],
        env,
      ],
      ['--audience', [...remote, '--audience', 'https://user:hunter2-pw@api.example'], env],
      [
        '--auth-url',
        [],
        { ...env, PARTNER_AUTH_URL: 'https://u:hunter2-pw@a.example', PARTNER_BASE_URL: 'https://b' },
      ],
    ] as const) {
      const message = usageError([...argv], environment);
      expect(message).toBe(
        `${flag} contains credentials (user:password@); give the address without them (https://host/...) and the client credentials in PARTNER_CLIENT_ID / PARTNER_CLIENT_SECRET`,
      );
      expect(message).not.toContain('hunter2');
      expect(message).not.toContain('\n');
    }
  });

  it('refuses two reports on one path, and a report path that is not a regular file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'conformance-'));
    const path = join(dir, 'r.out');
    expect(usageError(['--report-json', path, '--report-html', path])).toBe(
      `the same path ${path} is given for two reports; give each report its own file`,
    );
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    expect(usageError(['--report-json', fifo])).toBe(
      `--report-json: ${fifo} exists and is not a regular file (a FIFO, socket or device); expected a file path to write the report to`,
    );
  });
});
