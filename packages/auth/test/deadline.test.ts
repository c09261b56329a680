import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenNetworkError } from '../src/errors.js';
import { providerFor } from './support/provider.js';
import { startTokenServer, type TokenServer } from './support/token-server.js';

let server: TokenServer;
beforeAll(async () => {
  server = await startTokenServer();
});
afterAll(() => server.close());

const gc = (globalThis as { gc?: () => void }).gc;

describe('deadlines that hold', () => {
  it('runs with --expose-gc (the GC test below would prove nothing without it)', () => {
    expect(typeof gc).toBe('function');
  });

  it('fails a hanging token endpoint at requestTimeoutMs although garbage is collected meanwhile', async () => {
    server.next(() => 'hang');
    // Forced collections while the request hangs: a timer referenced only by a collected Request
    // (AbortSignal.timeout on undici) would be gone, and the call would hang for minutes.
    const collector = setInterval(() => gc?.(), 10);
    try {
      const error = await providerFor(server, { requestTimeoutMs: 300, retry: { maxRetries: 0 } })
        .getToken()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TokenNetworkError);
      expect((error as Error).message).toContain('it did not answer within 300 ms (requestTimeoutMs)');
    } finally {
      clearInterval(collector);
    }
  }, 10_000);

  it('fails at requestTimeoutMs even when the injected fetch ignores the signal', async () => {
    const neverSettles: typeof fetch = () => new Promise<Response>(() => {});
    const error = await providerFor(server, {
      fetch: neverSettles,
      requestTimeoutMs: 100,
      retry: { maxRetries: 0 },
    })
      .getToken()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenNetworkError);
    expect((error as Error).message).toContain('did not answer within 100 ms');
  }, 10_000);

  it('bounds the reading of the body too: a body that stalls after its head times out', async () => {
    const stalling = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"access_token":"');
    });
    await new Promise<void>((resolve) => stalling.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = stalling.address() as AddressInfo;
      const error = await providerFor(server, {
        tokenUrl: `http://127.0.0.1:${port}/oauth/token`,
        requestTimeoutMs: 200,
        retry: { maxRetries: 0 },
      })
        .getToken()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TokenNetworkError);
      expect((error as Error).message).toContain('did not answer within 200 ms');
    } finally {
      stalling.closeAllConnections();
      stalling.close();
    }
  }, 10_000);

  it('retries a token answer cut off mid-body as a network error (never a bare TypeError)', async () => {
    let calls = 0;
    const cutting = createServer((_req, res) => {
      calls++;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
      res.write('{"access_token":"eyJ');
      setTimeout(() => res.socket?.destroy(), 5);
    });
    await new Promise<void>((resolve) => cutting.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = cutting.address() as AddressInfo;
      const error = await providerFor(server, {
        tokenUrl: `http://127.0.0.1:${port}/oauth/token`,
        retry: { maxRetries: 1 },
      })
        .getToken()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TokenNetworkError);
      expect((error as Error).message).toMatch(
        new RegExp(
          `after 2 attempts: could not connect to 127\\.0\\.0\\.1:${port} or the connection dropped \\(`,
        ),
      );
      expect(calls).toBe(2);
    } finally {
      cutting.closeAllConnections();
      cutting.close();
    }
  });

  it('names host:port and the system error code when the auth service cannot be reached', async () => {
    const closed = await startTokenServer();
    const { tokenUrl } = closed;
    await closed.close();
    const error = await providerFor(server, { tokenUrl, retry: { maxRetries: 0 } })
      .getToken()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenNetworkError);
    const host = new URL(tokenUrl).host;
    expect((error as Error).message).toContain(
      `could not connect to ${host} or the connection dropped (ECONNREFUSED:`,
    );
  });

  /** Holds this process's event loop for `ms` (a long synchronous task, a starved host). */
  const stall = (ms: number) => {
    const until = performance.now() + ms;
    while (performance.now() < until) {
      // busy: no timer, no socket is served meanwhile
    }
  };

  it('a token whose answer comes during a stall longer than the deadline is kept, not timed out', async () => {
    // The token endpoint (in this process) signs its answer, then holds the event loop past both of the
    // client's deadlines before it writes: when the loop runs again, their timers are due before the
    // socket is read. A timer that fired late gives the answer a short grace.
    server.next(async (_request, issue) => {
      const body = await issue();
      stall(600);
      return { body };
    });
    const token = await providerFor(server, { requestTimeoutMs: 200, retry: { maxRetries: 0 } }).getToken({
      timeoutMs: 200,
    });
    expect(token.accessToken.length).toBeGreaterThan(20);
  }, 10_000);

  it('control: a token endpoint that never answers still fails after the same stall, within its graces', async () => {
    server.next(() => {
      stall(600);
      return 'hang';
    });
    const started = performance.now();
    const error = await providerFor(server, { requestTimeoutMs: 200, retry: { maxRetries: 0 } })
      .getToken()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenNetworkError);
    expect((error as Error).message).toContain('it did not answer within 200 ms (requestTimeoutMs)');
    // The stall, then at most five graces of 100 ms (and the test's own slack on a busy machine).
    expect(performance.now() - started).toBeLessThan(600 + 5 * 100 + 2_000);
  }, 10_000);
});
