import { spawn } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMock } from '@partner-lending/mock';
import { describe, expect, it } from 'vitest';

const bin = new URL('../../bin/partner-conformance.js', import.meta.url).href;

/** A server on 127.0.0.1 whose every answer is an endless JSON-looking body; it stops by itself after 60 s. */
async function endless(): Promise<{ url: string; server: Server }> {
  const chunk = Buffer.alloc(64 * 1024, 'a');
  const server = createServer((_req, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"access_token":"');
    const pump = () => {
      while (!res.destroyed && res.write(chunk)) {}
      if (!res.destroyed) res.once('drain', pump);
    };
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  setTimeout(() => server.close(), 60_000).unref();
  server.closeIdleConnections();
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server };
}

/** Runs the CLI in its own process and reports its exit code, output and peak resident memory. */
function cli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; out: string; maxRssMb: number }> {
  const code = `process.on('exit', () => process.stderr.write('maxRSS ' + process.resourceUsage().maxRSS + '\\n')); await import(${JSON.stringify(bin)});`;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', code, '--', 'cli', ...args], {
      env: { ...process.env, NO_COLOR: '1', ...env },
    });
    let out = '';
    child.stdout.on('data', (data) => (out += data));
    child.stderr.on('data', (data) => (out += data));
    child.on('exit', (exitCode) => {
      const kb = Number(/maxRSS (\d+)/.exec(out)?.[1] ?? Number.NaN);
      resolve({ code: exitCode ?? -1, out, maxRssMb: kb / 1024 });
    });
  });
}

describe('bounded reads', () => {
  it('an endless token answer stops the preflight with a reason, in little memory, and the JSON report says why', async () => {
    const { url, server } = await endless();
    const dir = await mkdtemp(join(tmpdir(), 'bounded-'));
    try {
      const run = await cli(['--auth-url', url, '--base-url', url, '--report-json', join(dir, 'r.json')], {
        PARTNER_CLIENT_ID: 'id',
        PARTNER_CLIENT_SECRET: 'secret-xyz-123',
      });
      expect(run.code, run.out).toBe(2);
      expect(run.maxRssMb, run.out).toBeLessThan(400);
      const report = JSON.parse(await readFile(join(dir, 'r.json'), 'utf8'));
      expect(report.stopped.code).toBe('ERR_PREFLIGHT');
      expect(report.checks).toEqual([]);
      expect(report.stopped.reason).not.toContain('timed out');
    } finally {
      server.closeAllConnections();
      server.close();
    }
  }, 60_000);

  it('an API streaming endless bodies: the run ends, stays under 400 MB, and writes its report with "body over" evidence', async () => {
    const { url, server } = await endless();
    const mock = await startMock({ publicUrls: { authUrl: 'http://127.0.0.1:1', baseUrl: url } });
    const dir = await mkdtemp(join(tmpdir(), 'bounded-'));
    try {
      const client = mock.clients[0]!;
      const run = await cli(
        ['--auth-url', mock.authUrl, '--base-url', url, '--report-json', join(dir, 'r.json')],
        {
          PARTNER_CLIENT_ID: client.clientId,
          PARTNER_CLIENT_SECRET: client.clientSecret,
        },
      );
      expect(run.maxRssMb, run.out).toBeLessThan(400);
      const text = await readFile(join(dir, 'r.json'), 'utf8');
      const report = JSON.parse(text);
      expect(report.checks.length).toBeGreaterThan(30);
      expect(text).toMatch(/\[body over \d+ bytes: the suite stopped reading\]/);
      expect([1, 2]).toContain(run.code);
    } finally {
      server.closeAllConnections();
      server.close();
      await mock.close();
    }
  }, 120_000);
});
