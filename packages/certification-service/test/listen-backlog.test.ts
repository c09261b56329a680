import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { text } from 'node:stream/consumers';
import { describe, expect, it } from 'vitest';
import { defaultListenSockets } from '../src/server.js';
import { inProcessService } from './support/in-process.js';

// Many partners' programs opening connections at once while the service's thread is busy: the kernel
// holds them until the service accepts them, up to the listen backlog. Past it, their SYNs are dropped
// and the clients resend them 1, 3, 7 s later (Linux's retransmission), which a partner sees as seconds
// of latency on a call the service answers in milliseconds.
const connections = 1200;
const somaxconn = (() => {
  try {
    return Number(readFileSync('/proc/sys/net/core/somaxconn', 'utf8'));
  } catch {
    return 0;
  }
})();

/** Opens `count` connections at once from another process; the time each took to connect (ms). */
async function connectAll(port: number, count: number, blockThread: () => void): Promise<number[]> {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const net = require('node:net');
       process.stdin.once('data', () => {
         const times = [];
         let done = 0;
         const sockets = [];
         for (let i = 0; i < ${count}; i += 1) {
           const started = performance.now();
           const socket = net.connect(${port}, '127.0.0.1', () => {
             times.push(performance.now() - started);
             if (++done === ${count}) { process.stdout.write(JSON.stringify(times)); for (const s of sockets) s.destroy(); process.exit(0); }
           });
           socket.on('error', () => { times.push(-1); if (++done === ${count}) { process.stdout.write(JSON.stringify(times)); process.exit(0); } });
           sockets.push(socket);
         }
       });
       process.stdout.write('ready\\n');
       setTimeout(() => process.exit(3), 30000).unref();`,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  const output = text(child.stdout);
  child.stdin.write('go\n');
  // The service's thread is busy (here: this whole thread) while the connections arrive.
  blockThread();
  return JSON.parse(await output) as number[];
}

const busyFor = (ms: number) => () => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

describe.skipIf(somaxconn < connections)('the listen backlog', () => {
  it(`holds ${connections} connections opened at once while the thread is busy: none waits for a resent SYN`, async () => {
    const svc = await inProcessService();
    try {
      const port = Number(new URL(svc.service.url).port);
      const times = await connectAll(port, connections, busyFor(1500));
      expect(times.filter((time) => time < 0)).toEqual([]);
      // Connected by the kernel at once (the accept queue had room), not after a 1-s SYN retransmission.
      expect(times.filter((time) => time >= 900)).toEqual([]);
    } finally {
      await svc.close();
    }
  }, 60_000);

  it('control: with a backlog of 64, connections past it wait a second or more for their SYN to be resent', async () => {
    const svc = await inProcessService({ listenBacklog: 64 });
    try {
      const port = Number(new URL(svc.service.url).port);
      const times = await connectAll(port, connections, busyFor(1500));
      expect(times.filter((time) => time >= 900).length).toBeGreaterThan(connections / 4);
    } finally {
      await svc.close();
    }
  }, 60_000);
});

// Four handles on the port: SO_REUSEPORT sockets where the runtime has them (Node ≥ 22.12 and 23.1, on
// Linux), else four descriptors of one socket (Node 20): see test/listen-sockets.test.ts.
const reusePort = (() => {
  const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
  return (
    process.platform === 'linux' &&
    (major > 23 || (major === 23 && minor >= 1) || (major === 22 && minor >= 12))
  );
})();

describe('the sockets on the port', () => {
  it(`listens on the default ${defaultListenSockets} ${reusePort ? 'sockets (SO_REUSEPORT)' : 'descriptors of one socket (no SO_REUSEPORT in this Node)'}, and every connection is served`, async () => {
    const svc = await inProcessService();
    try {
      expect(svc.service.listeningSockets).toBe(defaultListenSockets);
      // Connections the kernel spreads over the sockets: each one answered by the same HTTP server.
      const { Agent, request } = await import('node:http');
      const statuses = await Promise.all(
        Array.from(
          { length: 64 },
          () =>
            new Promise<number>((resolve, reject) => {
              const agent = new Agent({ keepAlive: false });
              request(`${svc.service.url}/healthz`, { agent }, (res) => {
                res.resume();
                res.on('end', () => resolve(res.statusCode ?? 0));
              })
                .on('error', reject)
                .end();
            }),
        ),
      );
      expect(statuses).toEqual(Array(64).fill(200));
    } finally {
      await svc.close();
    }
  }, 60_000);

  it('control: listenSockets 1 listens on one', async () => {
    const svc = await inProcessService({ listenSockets: 1 });
    try {
      expect(svc.service.listeningSockets).toBe(1);
    } finally {
      await svc.close();
    }
  }, 60_000);
});
