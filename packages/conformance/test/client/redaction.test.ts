import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { Redactor } from '../../src/common/redact.js';

const leaky = fileURLToPath(new URL('../clients/leaky-journey.mjs', import.meta.url));

const encodings = (id: string, secret: string) => {
  const everyChar = (text: string, upper: boolean) =>
    [...Buffer.from(text)]
      .map((byte) => `%${byte.toString(16).padStart(2, '0')}`)
      .map((part) => (upper ? part.toUpperCase() : part))
      .join('');
  const pair = Buffer.from(`${id}:${secret}`);
  return {
    secret,
    'secret, every character percent-encoded (lowercase hex)': everyChar(secret, false),
    'secret, every character percent-encoded (uppercase hex)': everyChar(secret, true),
    'Basic credentials (base64)': pair.toString('base64'),
    'Basic credentials (base64url)': pair.toString('base64url'),
    'a wrong secret in a token request': 'production-secret-sent-by-mistake-0123456789',
  };
};

describe('nothing secret in any output, in any encoding', () => {
  it('HTTP Basic, percent-encoding of every character, a wrong secret: none reaches the session, the reports or the console', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'redaction-'));
    const files = ['session.json', 'r.json', 'r.html', 'r.xml'].map((name) => join(dir, name));
    let out = '';
    let secret = '';
    let id = '';
    const code = await main(
      [
        'client',
        '--save-session',
        files[0]!,
        '--report-json',
        files[1]!,
        '--report-html',
        files[2]!,
        '--report-junit',
        files[3]!,
        '--',
        process.execPath,
        leaky,
      ],
      {
        stdout: { write: (text: string) => (out += text) },
        stderr: { write: (text: string) => (out += text) },
        env: process.env,
        clientOverrides: {
          stdio: 'pipe',
          onStage: (stage) => {
            secret = stage.client.clientSecret;
            id = stage.client.clientId;
          },
        },
      },
    );
    expect(code, out).toBe(1); // the journey leaks its secret to the API: a must check fails
    expect(secret.length).toBeGreaterThan(20);
    const outputs: Record<string, string> = {
      console: out,
      ...Object.fromEntries(
        await Promise.all(files.map(async (f): Promise<[string, string]> => [f, await readFile(f, 'utf8')])),
      ),
    };
    for (const [where, text] of Object.entries(outputs))
      for (const [what, value] of Object.entries(encodings(id, secret)))
        expect(text.includes(value), `${what} in ${where}`).toBe(false);
    // What was redacted is still visible as such: the evidence says where the secret went.
    const session = JSON.parse(outputs[files[0]!]!) as {
      exchanges: Array<{ requestHeaders: Record<string, string>; target: string; body: { text?: string } }>;
    };
    expect(session.exchanges[0]!.requestHeaders.authorization).toBe(
      'Basic [credentials: client id matches, secret matches]',
    );
    expect(session.exchanges[1]!.body.text).toContain('client_secret=[redacted]');
    expect(session.exchanges[2]!.body.text).toContain('client_secret=[redacted]');
    expect(session.exchanges[3]!.target).toContain('key=[client_secret]');
    const report = JSON.parse(outputs[files[1]!]!) as { checks: Array<{ id: string; status: string }> };
    expect(report.checks.find((check) => check.id === 'client-secret-confined')?.status).toBe('failed');
  }, 60_000);

  it('the redactor catches each encoding on its own (and leaves other text alone)', () => {
    const redactor = new Redactor();
    redactor.addSecret('s3cr3t-Value_x', '[client_secret]');
    redactor.addBasicCredentials('client-1', 's3cr3t-Value_x', '[client_credentials]');
    const basic = Buffer.from('client-1:s3cr3t-Value_x').toString('base64');
    expect(redactor.redact(`a=%73%33%63%72%33%74%2D%56%61%6c%75%65%5f%78&b=1`)).toBe('a=[client_secret]&b=1');
    expect(redactor.redact(`Authorization: Basic ${basic}`)).toBe(
      'Authorization: Basic [client_credentials]',
    );
    expect(redactor.redact(`Basic ${basic.replace(/=+$/, '')}`)).toBe('Basic [client_credentials]');
    expect(redactor.redact('nothing to hide here: s3cr3t-Valu')).toBe('nothing to hide here: s3cr3t-Valu');
  });
});
