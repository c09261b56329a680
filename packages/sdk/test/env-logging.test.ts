// PARTNER_LOG=debug|info|warn turns on the SDK's and the token provider's logging on stderr, in a real
// process reading its real environment; the client secret and whole tokens never appear.
import { execFile } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { type RunningMock, startMock } from '@partner-lending/mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const sdk = pathToFileURL(fileURLToPath(new URL('../dist/index.js', import.meta.url))).href;
const script = `
const { createPartnerClient } = await import(${JSON.stringify(sdk)});
const client = createPartnerClient();
await client.loans.list({ limit: 2 });
await client.loans.list({ limit: 2 });
console.log('done');
`;

let mock: RunningMock;
beforeAll(async () => {
  mock = await startMock();
});
afterAll(() => mock?.close());

async function withLog(
  level: string | undefined,
): Promise<{ stdout: string; stderr: string; secret: string }> {
  const client = mock.clients[0]!;
  const env: Record<string, string | undefined> = {
    ...process.env,
    PARTNER_AUTH_URL: mock.authUrl,
    PARTNER_BASE_URL: mock.baseUrl,
    PARTNER_CLIENT_ID: client.clientId,
    PARTNER_CLIENT_SECRET: client.clientSecret,
    PARTNER_LOG: level,
  };
  const { stdout, stderr } = await run(process.execPath, ['--input-type=module', '-e', script], {
    env,
    timeout: 30_000,
  });
  return { stdout, stderr, secret: client.clientSecret };
}

describe('PARTNER_LOG', () => {
  it('debug shows the token and API steps on stderr, with no secret or whole token', async () => {
    const { stdout, stderr, secret } = await withLog('debug');
    expect(stdout.trim()).toBe('done');
    expect(stderr).toContain('[partner-lending] info token: token-requested');
    expect(stderr).toContain('[partner-lending] info token: token-received');
    expect(stderr).toMatch(/\[partner-lending\] debug token: cache-hit/);
    expect(stderr).toMatch(/\[partner-lending\] debug GET \/v3\/partner\/[^/]+\/loans → 200/);
    expect(stderr).toMatch(/…[A-Za-z0-9_-]{6}/);
    expect(stderr).not.toContain(secret);
    expect(stderr).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\./);
  });

  it('info shows token events only; warn and unset show nothing for calls that succeed', async () => {
    const info = await withLog('info');
    expect(info.stderr).toContain('token: token-requested');
    expect(info.stderr).not.toMatch(/debug/);
    expect((await withLog('warn')).stderr).toBe('');
    expect((await withLog(undefined)).stderr).toBe('');
  });

  it('an unknown level leaves logging off and says so once', async () => {
    const { stdout, stderr } = await withLog('verbose');
    expect(stdout.trim()).toBe('done');
    expect(stderr).toBe(
      '[partner-lending] PARTNER_LOG="verbose" is not one of debug, info, warn: logging stays off.\n',
    );
  });
});
