import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCapped, readStreamCapped } from '../src/index.js';

// Bodies served over real HTTP on 127.0.0.1: `/bytes?n=N` answers N bytes of `a` in chunks of 1000,
// `/endless` writes until the reader goes away, `/bom` a UTF-8 byte order mark then `{}`.
let server: Server;
let base: string;
let endlessClosed: Promise<number>;

beforeAll(async () => {
  let closed: (written: number) => void = () => undefined;
  endlessClosed = new Promise((resolve) => {
    closed = resolve;
  });
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/bom') return res.end(Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]));
    if (url.pathname === '/endless') {
      let written = 0;
      const chunk = Buffer.alloc(16 * 1024, 0x61);
      const pump = () => {
        while (!res.destroyed && written < 1024 ** 3) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
      };
      res.on('close', () => closed(written));
      return pump();
    }
    const n = Number(url.searchParams.get('n'));
    for (let sent = 0; sent < n; sent += 1000) res.write(Buffer.alloc(Math.min(1000, n - sent), 0x61));
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const get = (path: string) => fetch(`${base}${path}`);

describe('readCapped, over: refuse (default)', () => {
  it('reads a body up to the limit, the limit itself included', async () => {
    expect(await readCapped(await get('/bytes?n=2500'), 4096)).toBe('a'.repeat(2500));
    expect(await readCapped(await get('/bytes?n=4096'), 4096)).toBe('a'.repeat(4096));
  });

  it('reads a body one byte over the limit as undefined (control: the same body under a larger limit reads)', async () => {
    expect(await readCapped(await get('/bytes?n=4097'), 4096)).toBeUndefined();
    expect(await readCapped(await get('/bytes?n=4097'), 4097)).toBe('a'.repeat(4097));
  });

  it('keeps a leading byte order mark, as Buffer decodes', async () => {
    expect(await readCapped(await get('/bom'), 100)).toBe('\uFEFF{}');
  });
});

describe("readCapped, over: 'truncate'", () => {
  it('keeps the first `limit` bytes and says how much was read (control: under the limit, no truncatedAt)', async () => {
    const cut = await readCapped(await get('/bytes?n=5000'), 4096, { over: 'truncate' });
    expect(cut.text).toBe('a'.repeat(4096));
    expect(cut.truncatedAt).toBeGreaterThan(4096);
    expect(cut.truncatedAt).toBeLessThanOrEqual(5000);
    expect(await readCapped(await get('/bytes?n=4096'), 4096, { over: 'truncate' })).toEqual({
      text: 'a'.repeat(4096),
    });
  });

  it('stops an endless body at the limit and cancels the rest', async () => {
    const cut = await readCapped(await get('/endless'), 64 * 1024, { over: 'truncate' });
    expect(cut.text).toHaveLength(64 * 1024);
    // The server saw its reader go: it stopped far short of the 1 GiB it would have written.
    expect(await endlessClosed).toBeLessThan(64 * 1024 * 1024);
  });

  it('drops a leading byte order mark, as TextDecoder decodes', async () => {
    expect(await readCapped(await get('/bom'), 100, { over: 'truncate' })).toEqual({ text: '{}' });
  });
});

describe('readStreamCapped', () => {
  it('returns the bytes up to the limit, undefined past it, and an empty buffer for no stream', async () => {
    expect((await readStreamCapped((await get('/bytes?n=3000')).body, 3000))?.length).toBe(3000);
    expect(await readStreamCapped((await get('/bytes?n=3001')).body, 3000)).toBeUndefined();
    expect(await readStreamCapped(null, 10)).toEqual(Buffer.alloc(0));
  });
});
