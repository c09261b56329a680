// Runs every file of examples/ against the mock, as a partner would run it: configured by PARTNER_*.
import { readdirSync } from 'node:fs';
import { type RunningMock, startMock } from '@partner-lending/mock';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';

let mock: RunningMock;
beforeAll(async () => {
  mock = await startMock();
});
afterAll(() => mock.close());
afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

async function run(example: string, clientIndex = 0): Promise<string> {
  const client = mock.clients[clientIndex]!;
  vi.stubEnv('PARTNER_AUTH_URL', mock.authUrl);
  vi.stubEnv('PARTNER_BASE_URL', mock.baseUrl);
  vi.stubEnv('PARTNER_CLIENT_ID', client.clientId);
  vi.stubEnv('PARTNER_CLIENT_SECRET', client.clientSecret);
  const lines: string[] = [];
  vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
    lines.push(args.map((arg) => (typeof arg === 'string' ? arg : JSON.stringify(arg))).join(' '));
  });
  await import(`../examples/${example}.ts`);
  return lines.join('\n');
}

describe('examples', () => {
  it('has a test for every example', () => {
    expect(readdirSync(new URL('../examples', import.meta.url)).sort()).toEqual([
      'create-loan-draft.ts',
      'environment-variables.ts',
      'handle-scope-not-granted.ts',
      'iterate-loans.ts',
      'list-loans.ts',
    ]);
  });

  it('list-loans', async () => {
    const out = await run('list-loans');
    expect(out).toMatch(/^first page of loans: 10 of 25, next offset 10\nfirst loan: \{"id":"loan-0001",/);
    expect(out).toMatch(/\nstatus 200, X-Total-Count 25, 1 loan$/);
  });

  it('iterate-loans', async () => {
    expect(await run('iterate-loans')).toBe(
      [
        'loan loan-0001',
        'loan loan-0002',
        'loan loan-0003',
        '25 loans in all',
        'page at offset 0: 10 loans',
        'page at offset 10: 10 loans',
        'page at offset 20: 5 loans',
      ].join('\n'),
    );
  });

  it('create-loan-draft', async () => {
    expect(await run('create-loan-draft')).toMatch(/^created loan draft [0-9a-f-]{36}$/);
  });

  it('handle-scope-not-granted, with the read-only demo partner', async () => {
    const before = mock.requestLog().filter((entry) => entry.server === 'api').length;
    expect(await run('handle-scope-not-granted', 2)).toMatch(/^not authorised for create:repayment: /);
    expect(mock.requestLog().filter((entry) => entry.server === 'api').length).toBe(before);
  });

  it('environment-variables', async () => {
    expect(await run('environment-variables')).toBe(
      [
        '4 options are missing: baseUrl (PARTNER_BASE_URL: the partner API address, e.g. https://partner-api.example); authUrl (PARTNER_AUTH_URL: the authentication service address, e.g. https://auth.partner.example); clientId (PARTNER_CLIENT_ID: the client id from the partner administration console); clientSecret (PARTNER_CLIENT_SECRET: the client secret from the partner administration console). Pass them to createPartnerClient({ … }) or set the environment variables.',
        'connected; first loan: loan-0001',
      ].join('\n'),
    );
  });
});
