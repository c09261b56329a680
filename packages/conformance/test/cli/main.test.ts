import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type FaultName, type MockClient, type MockOptions, startMock } from '@partner-lending/mock';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import type { ConformanceOptions } from '../../src/server/run.js';
import { closedPortUrl, sharedSigningKey, sink } from '../helpers.js';

function io(env: Record<string, string | undefined> = {}, overrides: ConformanceOptions = {}, isTTY = false) {
  const stdout = sink(isTTY);
  const stderr = sink(isTTY);
  return { stdout, stderr, env, overrides };
}

const withKey = async (mock: MockOptions = {}): Promise<MockOptions> => ({
  ...mock,
  signingKey: await sharedSigningKey(),
});

/**
 * A fetch that notes every token-shaped value the suite sends or receives (issued tokens, the forged
 * single-fault tokens, tokens in query strings, bodies and headers), to look for them in the output.
 */
function recordingFetch(tokens: Set<string>): typeof globalThis.fetch {
  const collect = (text: string) => {
    for (const match of text.matchAll(/eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]*)?/g))
      if (match[0].length > 20) tokens.add(match[0]);
  };
  return async (input, init) => {
    collect(decodeURIComponent(String(input instanceof Request ? input.url : input)));
    for (const [, value] of new Headers(init?.headers)) collect(value);
    if (init?.body !== undefined && init.body !== null) collect(decodeURIComponent(String(init.body)));
    const response = await fetch(input, init);
    collect(await response.clone().text());
    return response;
  };
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
    expect(streams.stdout.text()).toContain('PASS — 1 must check not verified: integrity-expired (exit 0)');
    const json = JSON.parse(readFileSync(join(dir, 'r.json'), 'utf8'));
    expect(json.schemaVersion).toBe(3);
    expect(json.mode).toBe('server');
    // Rules are cited by the API documentation's title, never by an internal file name.
    for (const file of ['r.json', 'r.xml', 'r.html'])
      expect(readFileSync(join(dir, file), 'utf8')).not.toMatch(/\bseed\b/i);
    expect(streams.stdout.text()).not.toMatch(/\bseed\b/i);
    expect(readFileSync(join(dir, 'r.json'), 'utf8')).toContain(
      'Partner Lending API — Authentication and Access §',
    );
    expect(json.summary.failed + json.summary.errored).toBe(0);
    const all =
      ['r.json', 'r.xml', 'r.html'].map((file) => readFileSync(join(dir, file), 'utf8')).join('') +
      streams.stdout.text();
    expect(all).not.toMatch(/eyJ[\w-]+\.eyJ[\w-]+\.[\w-]{10,}/);
    // JUnit: well-formed XML, one testcase per check of the JSON report, each named by its id.
    const xml = readFileSync(join(dir, 'r.xml'), 'utf8');
    expect(XMLValidator.validate(xml)).toBe(true);
    const parsed = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '' }).parse(xml);
    const cases = [parsed.testsuites.testsuite]
      .flat()
      .flatMap((suite: { testcase: unknown }) => [suite.testcase].flat()) as Array<{ name: string }>;
    expect(cases.map((c) => c.name).sort()).toEqual(json.checks.map((c: { id: string }) => c.id).sort());
    // HTML: self-contained, nothing fetched from anywhere.
    const html = readFileSync(join(dir, 'r.html'), 'utf8');
    expect(html).not.toMatch(/<(script|link|img|iframe|object|embed|video|audio|source|base)\b/i);
    expect(html).not.toMatch(/\b(src|href|srcset|action|poster|data)\s*=/i);
    expect(html).not.toMatch(/url\s*\(|@import/i);
  });

  it('keeps the client secret and every whole token out of the console (TTY and not) and the three reports', async () => {
    const client: MockClient = {
      partnerId: 'partner-secret-scan',
      clientId: 'scan-client-id',
      clientSecret: 'scan-SECRET-value-0123456789',
      authorizedScopes: ['read:loans', 'create:loan_draft', 'create:journal_update', 'create:repayment'],
    };
    const other: MockClient = {
      ...client,
      partnerId: 'partner-other',
      clientId: 'other-id',
      clientSecret: 'other-secret-987654',
    };
    // Faults that put secrets and tokens into failing requests, hence into curl lines and details: token
    // answers to requests holding the real secret, a wrong secret accepted, tokens in the query and the
    // body, forged tokens (alg none, unknown key, jku, embedded jwk) accepted, foreign-audience tokens,
    // other partners' paths, crashes on bad headers.
    const faults: FaultName[] = [
      'token-omit-no-store',
      'token-ignore-requested-scope',
      'token-accept-wrong-secret',
      'token-accept-missing-credentials',
      'api-accept-query-token',
      'api-accept-body-token',
      'api-accept-alg-none',
      'api-skip-signature-check',
      'api-trust-jku',
      'api-trust-embedded-jwk',
      'token-accept-foreign-audience',
      'api-skip-audience-check',
      'api-skip-partner-isolation',
      'api-ignore-scope',
      'api-crash-on-malformed-header',
    ];
    for (const isTTY of [false, true]) {
      const dir = mkdtempSync(join(tmpdir(), 'conformance-secrets-'));
      const tokens = new Set<string>();
      const streams = io(
        {},
        { mock: await withKey({ clients: [client, other], faults }), fetch: recordingFetch(tokens) },
        isTTY,
      );
      const files = ['r.json', 'r.xml', 'r.html'].map((file) => join(dir, file));
      const code = await main(
        ['--report-json', files[0]!, '--report-junit', files[1]!, '--report-html', files[2]!],
        streams,
      );
      expect(streams.stderr.text()).toBe('');
      expect(code).toBe(1);
      const outputs: Record<string, string> = {
        stdout: streams.stdout.text(),
        json: readFileSync(files[0]!, 'utf8'),
        junit: readFileSync(files[1]!, 'utf8'),
        html: readFileSync(files[2]!, 'utf8'),
      };
      // The run failed loudly, with curl lines: there was something to leak.
      expect(outputs.stdout).toContain('reproduce: curl');
      expect(outputs.stdout).toContain('"$PARTNER_CLIENT_SECRET"');
      expect(tokens.size).toBeGreaterThan(10);
      for (const [name, text] of Object.entries(outputs)) {
        expect(text, name).not.toContain(client.clientSecret);
        expect(text, name).not.toContain(encodeURIComponent(client.clientSecret));
        expect(text, name).not.toMatch(/eyJ[\w-]+\.eyJ[\w-]*\./);
        const leaked = [...tokens].filter((token) => text.includes(token));
        expect(leaked, name).toEqual([]);
      }
    }
  });

  it('exit 1 when a must check fails', async () => {
    const streams = io({}, { mock: await withKey({ faults: ['token-omit-no-store'] }) });
    expect(await main(['--only', 'token-no-store'], streams)).toBe(1);
    expect(streams.stdout.text()).toContain('✗ token-no-store [must, RFC 6749 §5.1]');
  });

  it('exit 2 for usage errors, in one line', async () => {
    const streams = io();
    expect(await main(['--only', 'nope'], streams)).toBe(2);
    expect(streams.stderr.text()).toMatch(/^partner-conformance: --only: unknown check id nope\. [^\n]*\n$/);
  });

  it('exit 2 for refused credentials, with a clear message and no stack trace or secret', async () => {
    const mock = await startMock(await withKey());
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

describe('partner-conformance: certification mode and URLs with credentials', () => {
  it('--certify fails the run (exit 1) when a must check was not verified, naming it', async () => {
    const streams = io({}, { mock: await withKey() });
    const code = await main(['--certify', '--only', 'integrity-expired,token-no-store'], streams);
    expect(code).toBe(1);
    expect(streams.stdout.text()).toContain(
      'FAIL — certification needs every must check verified; 1 must check not verified: integrity-expired (exit 1)',
    );
    const plain = io({}, { mock: await withKey() });
    expect(await main(['--only', 'integrity-expired,token-no-store'], plain)).toBe(0);
    expect(plain.stdout.text()).toContain('PASS — 1 must check not verified: integrity-expired (exit 0)');
  });

  it('a password in --auth-url: exit 2, one line, the password not echoed anywhere', async () => {
    const streams = io({ PARTNER_CLIENT_ID: 'a', PARTNER_CLIENT_SECRET: 'b' });
    const code = await main(
      ['--auth-url', 'https://user:s3cr3t-pw@auth.example', '--base-url', 'https://api.example'],
      streams,
    );
    expect(code).toBe(2);
    expect(streams.stderr.text().trim().split('\n')).toHaveLength(1);
    expect(`${streams.stdout.text()}${streams.stderr.text()}`).not.toContain('s3cr3t-pw');
  });
});
