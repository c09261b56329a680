import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { formatSession, parseSession, startStage } from '../../src/index.js';
import { clientCredentialsRequest } from '../helpers.js';

/** Opens a connection that sends `bytes` of a body announced as bigger, and never finishes it. */
function holdBody(port: number, bytes: number): Promise<{ socket: Socket; answer: () => string }> {
  return new Promise((resolve, reject) => {
    let answer = '';
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(
        `POST /v3/partner/p/loan_draft HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${bytes + 10}\r\n\r\n`,
      );
      socket.write(Buffer.alloc(bytes, 0x61), () => resolve({ socket, answer: () => answer }));
    });
    socket.on('data', (chunk) => (answer += chunk));
    socket.on('error', () => {});
    socket.once('error', reject);
  });
}

describe('the stage holds a bounded amount of request bodies at once', () => {
  it('200 connections holding 900 KiB each: the stage keeps under its budget, and refuses the rest with 503', async () => {
    const maxHeldBytes = 32 * 1024 * 1024;
    const stage = await startStage({ maxHeldBytes, apiDelayMs: 0 });
    const port = Number(new URL(stage.baseUrl).port);
    global.gc?.();
    const before = process.memoryUsage().rss;
    const held: Array<Awaited<ReturnType<typeof holdBody>>> = [];
    try {
      for (let index = 0; index < 200; index++) held.push(await holdBody(port, 900 * 1024));
      await new Promise((resolve) => setTimeout(resolve, 500));
      const grown = process.memoryUsage().rss - before;
      const refused = held.filter((item) => item.answer().startsWith('HTTP/1.1 503')).length;
      // 200 × 900 KiB would be 176 MiB held; the budget is 32 MiB (and the kernel buffers the rest).
      expect(refused).toBeGreaterThan(150);
      expect(grown, `RSS grew by ${Math.round(grown / 1048576)} MiB`).toBeLessThan(120 * 1024 * 1024);
      // Negative control: one connection within the budget is not refused.
      expect(held[0]!.answer()).toBe('');
    } finally {
      for (const item of held) item.socket.destroy();
      await stage.close();
    }
    const session = stage.session({
      command: [],
      exitCode: null,
      signal: null,
      durationMs: 0,
      ending: 'duration',
    });
    expect(
      session.exchanges.filter((exchange) => exchange.error === 'temporarily_unavailable').length,
    ).toBeGreaterThan(150);
  }, 60_000);

  it('past the recording cap, exchanges and the tokens they issued are counted, not kept; the session stays one --judge reads', async () => {
    const stage = await startStage({ maxExchanges: 5, tokenDelayMs: 0 });
    try {
      for (let index = 0; index < 12; index++)
        await clientCredentialsRequest(stage.tokenUrl, stage.client).then((response) =>
          response.arrayBuffer(),
        );
    } finally {
      await stage.close();
    }
    const session = stage.session({
      command: ['x'.repeat(5000), ...Array(300).fill('arg')],
      exitCode: 0,
      signal: null,
      durationMs: 1,
      ending: 'exited',
    });
    expect(session.exchanges).toHaveLength(5);
    expect(session.dropped).toBe(7);
    expect(session.tokens.map((token) => token.ref)).toEqual(['T1', 'T2', 'T3', 'T4', 'T5']);
    expect(session.journey.command).toHaveLength(256);
    expect(() => parseSession(formatSession(session))).not.toThrow();
  });
});
