import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type StaticServer, startStaticServer } from '../../src/build/static-server.js';

let root: string;
let server: StaticServer;

beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'static-'));
  root = join(dir, 'site');
  await mkdir(join(root, 'assets'), { recursive: true });
  await writeFile(join(root, 'index.html'), '<h1>home</h1>');
  await writeFile(join(root, 'assets/site.css'), 'body{}');
  await writeFile(join(dir, 'secret.txt'), 'outside the site');
  server = await startStaticServer(root);
});

afterAll(async () => {
  await server.close();
  await rm(join(root, '..'), { recursive: true, force: true });
});

describe('startStaticServer', () => {
  it('listens on loopback and serves files with their content type, / as index.html', async () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const home = await fetch(server.url);
    expect(home.status).toBe(200);
    expect(home.headers.get('content-type')).toBe('text/html; charset=utf-8');
    await expect(home.text()).resolves.toBe('<h1>home</h1>');
    const css = await fetch(new URL('assets/site.css', server.url));
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
  });

  it('answers 404 for missing files and for paths outside the site', async () => {
    expect((await fetch(new URL('nope.html', server.url))).status).toBe(404);
    expect((await fetch(new URL('/%2e%2e/secret.txt', server.url))).status).toBe(404);
    expect((await fetch(new URL('/assets/..%2f..%2fsecret.txt', server.url))).status).toBe(404);
  });

  it('answers 405 to methods other than GET and HEAD', async () => {
    const response = await fetch(server.url, { method: 'POST', body: 'x' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET, HEAD');
  });
});
