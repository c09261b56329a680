import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../../test-support/chromium.js';
import { type InProcessService, inProcessService } from './support/in-process.js';
import { freePort } from './support/postgres.mjs';
import { api, type CreatedRun, runCommand } from './support/service.js';

// The operator guide's deployment: TLS terminated by Debian's nginx (the guide's location block), the
// service behind it with an https public URL. The reviewer signs in and decides through the proxy in
// Chromium; the cookie is Secure, so the browser never sends it to the service's plain-HTTP port. The
// public host is a name, certify.test, that Chromium and curl resolve to 127.0.0.1: Chromium counts
// loopback addresses as secure contexts and would send a Secure cookie to http://127.0.0.1 anyway.
const host = 'certify.test';
/** curl with the test's certificate and name (asynchronously: the service answers from this process). */
const curl = (args: string[]) =>
  runCommand('curl', [
    '-sS',
    '--cacert',
    join(dir, 'cert.pem'),
    '--resolve',
    `${host}:${new URL(origin).port}:127.0.0.1`,
    ...args,
  ]);

const nginxPath = process.env.NGINX_PATH ?? '/usr/sbin/nginx';

let dir: string;
let nginx: ReturnType<typeof spawn>;
let browser: Browser;
let svc: InProcessService;
let origin: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pcs-tls-'));
  // A self-signed certificate for the host (Chromium is told to accept it; curl is given it).
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      `/CN=${host}`,
      '-addext',
      `subjectAltName=DNS:${host}`,
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
    ],
    { stdio: 'ignore' },
  );
  const port = await freePort();
  origin = `https://${host}:${port}`;
  svc = await inProcessService({ publicUrl: origin });
  const upstream = new URL(svc.service.url);
  writeFileSync(
    join(dir, 'nginx.conf'),
    `daemon off;
master_process off;
pid ${dir}/nginx.pid;
error_log stderr warn;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  server {
    listen 127.0.0.1:${port} ssl;
    ssl_certificate ${dir}/cert.pem;
    ssl_certificate_key ${dir}/key.pem;
    location / {
      proxy_pass http://127.0.0.1:${upstream.port};
      proxy_set_header Host $host;
      proxy_request_buffering off;
    }
  }
}
`,
  );
  nginx = spawn(nginxPath, ['-p', dir, '-e', 'stderr', '-c', join(dir, 'nginx.conf')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  nginx.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  // Stops with the test process whatever happens.
  process.once('exit', () => nginx.kill('SIGKILL'));
  const deadline = Date.now() + 15_000;
  for (;;) {
    const probe = await curl(['-o', '/dev/null', '-w', '%{http_code}', `${origin}/healthz`]);
    if (probe.stdout === '200') break;
    if (Date.now() > deadline || nginx.exitCode !== null)
      throw new Error(
        `nginx did not start (exit ${nginx.exitCode}, last probe ${probe.stdout} ${probe.stderr}): ${stderr.slice(0, 500)}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  browser = await launchChromium(chromium, [`--host-resolver-rules=MAP ${host} 127.0.0.1`]);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  nginx?.kill('SIGTERM');
  await svc?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('behind a TLS-terminating nginx', () => {
  it('a partner creates a run and gets a token through it with curl, at https addresses', async () => {
    const { apiKey } = await svc.partner('Behind TLS');
    const created = await curl([
      '--fail-with-body',
      '-X',
      'POST',
      '-H',
      `authorization: Bearer ${apiKey}`,
      '-H',
      'content-type: application/json',
      '-d',
      '{}',
      `${origin}/api/runs`,
    ]);
    expect(created.code, created.stderr + created.stdout).toBe(0);
    const run = JSON.parse(created.stdout) as CreatedRun;
    expect(run.tokenUrl.startsWith(`${origin}/runs/ra_`)).toBe(true);
    expect(run.tokenUrl).not.toContain(run.id);
    const token = await curl([
      '--fail-with-body',
      '-u',
      `${run.clientId}:${run.clientSecret}`,
      '-d',
      'grant_type=client_credentials',
      run.tokenUrl,
    ]);
    expect(token.code, token.stdout).toBe(0);
    expect(JSON.parse(token.stdout).token_type.toLowerCase()).toBe('bearer');
    await api(svc.service.url, apiKey, 'POST', `/api/runs/${run.id}/finish`, {});
  });

  it('the reviewer signs in and decides over https; the cookie is Secure and never sent to the plain-HTTP port', async () => {
    const { apiKey } = await svc.partner('Acme over TLS');
    const { credential } = await svc.reviewer('Tess TLS');
    const run = (await api(svc.service.url, apiKey, 'POST', '/api/runs', {})).json() as CreatedRun;
    await api(svc.service.url, apiKey, 'POST', `/api/runs/${run.id}/finish`, {});
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    const page = await context.newPage();
    await page.goto(`${origin}/`);
    expect(new URL(page.url()).pathname).toBe('/signin');
    await page.fill('#credential', credential);
    await Promise.all([page.waitForURL(`${origin}/ui/partners`), page.click('button')]);
    const session = (await context.cookies()).find((cookie) => cookie.name === 'pcs_session');
    expect(session).toMatchObject({ secure: true, httpOnly: true, sameSite: 'Strict' });
    // A decision through the proxy: the form's origin is the https public URL, which the service expects.
    await page.goto(`${origin}/ui/runs/${run.id}`);
    await page.fill('#note', 'Rejected over TLS: an empty run.');
    await Promise.all([page.waitForURL(/\/partners\//), page.click('button[value=rejected]')]);
    const [decision] = await svc.db.query<{ decision: string; run_id: string }>(
      'SELECT decision, run_id FROM decisions WHERE run_id = $1',
      [run.id],
    );
    expect(decision).toEqual({ decision: 'rejected', run_id: run.id });
    // The control: the same browser at the service's own plain-HTTP port, same host, is not signed in —
    // the Secure cookie stays on https.
    await page.goto(`http://${host}:${new URL(svc.service.url).port}/`);
    expect(new URL(page.url()).pathname).toBe('/signin');
    await context.close();
  });
});
