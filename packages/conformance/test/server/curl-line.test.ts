import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startMock } from '@partner-lending/mock';
import { describe, expect, it } from 'vitest';
import { Redactor } from '../../src/common/redact.js';
import { curlLine, shellQuote } from '../../src/server/curl-line.js';
import { runConformance } from '../../src/server/run.js';
import { sharedSigningKey } from '../helpers.js';

describe('curlLine', () => {
  const redactor = new Redactor();
  redactor.addSecret('the-client-secret', '$PARTNER_CLIENT_SECRET');
  redactor.addSecret('the-client-id', '$PARTNER_CLIENT_ID');

  it('repeats a token request with the credentials as environment variables', () => {
    const line = curlLine(
      {
        method: 'POST',
        url: 'http://127.0.0.1:1/oauth/token',
        headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
        form: [
          ['grant_type', 'client_credentials'],
          ['client_id', 'the-client-id'],
          ['client_secret', 'the-client-secret'],
        ],
      },
      redactor,
    );
    expect(line).toBe(
      `curl -i -X POST 'http://127.0.0.1:1/oauth/token' -H 'accept: application/json' --data-urlencode 'grant_type=client_credentials' --data-urlencode 'client_id='"$PARTNER_CLIENT_ID" --data-urlencode 'client_secret='"$PARTNER_CLIENT_SECRET"`,
    );
  });

  it('shortens a token in a header and in the query string', () => {
    const token = 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.';
    const line = curlLine(
      {
        method: 'GET',
        url: `http://h/v3?access_token=${token}`,
        headers: { authorization: `Bearer ${token}` },
      },
      redactor,
    );
    expect(line).not.toContain(token);
    expect(line).toContain(`-H 'authorization: Bearer …${token.slice(-6)}'`);
  });

  it('cuts a huge header, saying how long it was', () => {
    const line = curlLine(
      { method: 'GET', url: 'http://h/', headers: { authorization: `Bearer ${'A'.repeat(8192)}` } },
      redactor,
    );
    expect(line).toBe(`curl -i -X GET 'http://h/' -H 'authorization: Bearer ${'A'.repeat(58)}…[8214 chars]'`);
  });

  it('quotes single quotes for a POSIX shell', () => {
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
  });
});

describe('reproduce lines a reviewer can run', () => {
  it('fetch a token with the credentials from the environment, then repeat the failing request', async () => {
    const mock = await startMock({
      signingKey: await sharedSigningKey(),
      faults: ['api-accept-query-token'],
    });
    try {
      const client = mock.clients[0]!;
      const report = await runConformance({
        authUrl: mock.authUrl,
        baseUrl: mock.baseUrl,
        clientId: client.clientId,
        clientSecret: client.clientSecret,
        only: ['bearer-query-token'],
      });
      const details = report.checks[0]!.details;
      const script = details.slice(details.indexOf('reproduce: ') + 'reproduce: '.length);
      expect(script).toMatch(/^TOKEN=\$\(curl /);
      expect(script).not.toContain(client.clientSecret);
      // Asynchronously: the mock answers from this very process.
      const { stdout: output } = await promisify(execFile)('sh', ['-c', script], {
        timeout: 10_000,
        env: {
          PATH: process.env.PATH,
          PARTNER_CLIENT_ID: client.clientId,
          PARTNER_CLIENT_SECRET: client.clientSecret,
        },
        encoding: 'utf8',
      });
      // The same answer the check judged: the query-string token honoured.
      expect(output).toMatch(/^HTTP\/1\.1 200 /);
    } finally {
      await mock.close();
    }
  });
});
