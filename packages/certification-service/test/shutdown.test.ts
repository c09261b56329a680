import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type InProcessService, inProcessService } from './support/in-process.js';

// The graceful stop (SIGTERM calls close()): /readyz turns 503 at once while the instance still serves
// for `shutdownDelayMs`; then the listening socket closes, idle connections are closed at once, and a
// call in flight may take up to 10 s to finish (it used to be cut after 2 s).

let running: InProcessService | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

const port = (service: InProcessService) => Number(new URL(service.service.url).port);

/** Sends one raw HTTP/1.1 request on a new connection; resolves with what came back before the close. */
function rawRequest(target: number, path: string): Promise<{ text: string; error?: string }> {
  return new Promise((resolve) => {
    const socket = connect(target, '127.0.0.1');
    let text = '';
    socket.on('connect', () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    });
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
    });
    socket.on('error', (error: NodeJS.ErrnoException) =>
      resolve({ text, error: error.code ?? error.message }),
    );
    socket.on('close', () => resolve({ text }));
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
  });
}

describe('stopping an instance', () => {
  it('answers /readyz 503 "stopping" at once, keeps serving through shutdownDelayMs, then refuses connections', async () => {
    running = await inProcessService({ shutdownDelayMs: 1500 });
    const { url } = running.service;
    const before = await fetch(`${url}/readyz`);
    expect(before.status).toBe(200);
    expect((await before.json()).checks.accepting).toBe('ok');

    const closed = running.service.close();
    const started = Date.now();
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(503);
    expect(ready.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await ready.json()).toMatchObject({ status: 'unavailable', checks: { accepting: 'stopping' } });
    // Still serving meanwhile: a new connection is accepted and answered.
    const alive = await rawRequest(port(running), '/healthz');
    expect(alive.text).toMatch(/^HTTP\/1\.1 200 /);
    expect(Date.now() - started).toBeLessThan(1500);

    await closed;
    expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
    // Not vacuous: after the stop, a connection is refused.
    const after = await rawRequest(port(running), '/healthz');
    expect(after.error).toBe('ECONNREFUSED');
    running.service.close = async () => {};
  });

  it('lets a call in flight for longer than 2 s finish after the stop, and closes idle connections at once', async () => {
    running = await inProcessService();
    const { apiKey } = await running.partner('Slow Lending');
    const target = port(running);
    const body = JSON.stringify({ scenarios: [] });
    // A creation whose body arrives in two halves, 3 s apart: the call is in flight through the stop.
    const slow = new Promise<string>((resolve) => {
      const socket = connect(target, '127.0.0.1');
      let text = '';
      socket.on('connect', () => {
        socket.write(
          `POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${apiKey}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
        );
        setTimeout(() => socket.write(body.slice(5)), 3000);
      });
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1');
      });
      socket.on('error', (error: NodeJS.ErrnoException) => resolve(`error ${error.code}`));
      socket.on('close', () => resolve(text));
    });
    // An idle keep-alive connection (a request answered, the connection kept): closed at the stop.
    const idle = connect(target, '127.0.0.1');
    const idleClosed = new Promise<number>((resolve) => idle.on('close', () => resolve(Date.now())));
    idle.on('error', () => {});
    await new Promise<void>((resolve) => {
      idle.once('data', () => resolve());
      idle.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const stopped = Date.now();
    const closed = running.service.close();
    expect((await idleClosed) - stopped).toBeLessThan(1000);
    const answer = await slow;
    expect(answer).toMatch(/^HTTP\/1\.1 201 /);
    await closed;
    running.service.close = async () => {};
  });
});
