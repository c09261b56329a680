import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect, createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { listenOn } from '../src/http/listen.js';
import { defaultListenSockets } from '../src/server.js';
import { inProcessService } from './support/in-process.js';

// libuv (since 1.45: Node 20 and later) accepts one connection per listening handle per turn of the
// event loop. The service listens on several handles of its port (SO_REUSEPORT sockets where the
// runtime has them, else several descriptors of one socket), so a burst of connections that waited
// while its thread was busy is taken several per turn. The service's tests take whichever path the
// `node` running them has (CI's Node 20: descriptor copies; Node ≥ 22.12: SO_REUSEPORT); the copies
// are also tested directly on any runtime (`reusePort: false`).

const burst = 400;

/** A process that opens `count` connections to `port` when told and holds them until its stdin closes. */
async function connector(
  port: number,
  count: number,
): Promise<{ go(): Promise<number>; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const net = require('node:net');
       const sockets = [];
       process.stdin.once('data', () => {
         let done = 0, failed = 0;
         for (let i = 0; i < ${count}; i += 1) {
           const socket = net.connect(${port}, '127.0.0.1', () => { if (++done === ${count}) process.stdout.write(String(failed) + '\\n'); });
           socket.on('error', () => { failed += 1; if (++done === ${count}) process.stdout.write(String(failed) + '\\n'); });
           sockets.push(socket);
         }
       });
       process.stdin.on('end', () => process.exit(0));
       process.stdout.write('ready\\n');
       setTimeout(() => process.exit(3), 30000).unref();`,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  child.stdout?.setEncoding('utf8');
  await new Promise<void>((resolve) => child.stdout?.once('data', () => resolve()));
  return {
    child,
    go: async () => {
      const failed = new Promise<number>((resolve) =>
        child.stdout?.once('data', (line) => resolve(Number(line))),
      );
      child.stdin?.write('go\n');
      return failed;
    },
  };
}

/**
 * Opens `burst` connections from another process while this thread is blocked for 1 s (the kernel
 * completes them and queues them), then counts, turn by turn of the event loop (one `setImmediate` a
 * turn), the connections `server` is given: what was accepted in each turn and by which handle.
 */
async function acceptBurst(server: Server, port: number) {
  const accepted: Socket[] = [];
  const onConnection = (socket: Socket) => accepted.push(socket);
  server.prependListener('connection', onConnection);
  const client = await connector(port, burst);
  try {
    const failed = client.go();
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
    const perTurn: number[] = [];
    await new Promise<void>((resolve) => {
      let seen = 0;
      const started = Date.now();
      const turn = () => {
        perTurn.push(accepted.length - seen);
        seen = accepted.length;
        if (seen >= burst || Date.now() - started > 20_000) resolve();
        else setImmediate(turn);
      };
      setImmediate(turn);
    });
    return {
      failed: await failed,
      accepted: accepted.length,
      maxPerTurn: Math.max(...perTurn),
      turns: perTurn.filter((count) => count > 0).length,
      allowHalfOpen: accepted.every((socket) => socket.allowHalfOpen),
    };
  } finally {
    server.off('connection', onConnection);
    for (const socket of accepted) socket.destroy();
    client.child.stdin?.end();
    if (client.child.exitCode === null) await once(client.child, 'exit');
  }
}

/** Whether a new connection to `port` is refused (true) or taken by the kernel (false) within 5 s. */
function refused(port: number): Promise<boolean | 'hung'> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const timer = setTimeout(() => {
      socket.destroy();
      resolve('hung');
    }, 5000);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(error.code === 'ECONNREFUSED');
    });
  });
}

const connectionsOf = (server: Server | NetServer) =>
  new Promise<number>((resolve) => server.getConnections((_error, count) => resolve(count ?? 0)));

/** Until `server` holds a connection (at most 20 s). */
async function untilConnected(server: Server | NetServer): Promise<void> {
  const deadline = Date.now() + 20_000;
  while ((await connectionsOf(server)) < 1 && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 20));
}

const closeServer = (server: Server) =>
  new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });

describe('the listening handles of the service', () => {
  it(`accepts a burst of ${burst} connections several per turn of the event loop, on the default 32 handles, each given to the HTTP server as its own`, async () => {
    const svc = await inProcessService();
    try {
      expect(svc.service.listeningSockets).toBe(defaultListenSockets);
      const port = Number(new URL(svc.service.url).port);
      const result = await acceptBurst(svc.service.server, port);
      expect(result.failed).toBe(0);
      expect(result.accepted).toBe(burst);
      // A turn took one per handle (up to 32), not one.
      expect(result.maxPerTurn).toBeGreaterThan(1);
      expect(result.turns).toBeLessThan(burst / 2);
      // As the HTTP server's own connections are (half-open allowed), not a bare net.Server's.
      expect(result.allowHalfOpen).toBe(true);
    } finally {
      await svc.close();
    }
  }, 90_000);

  it('control: on one handle (listenSockets 1) the same burst is accepted one per turn', async () => {
    const svc = await inProcessService({ listenSockets: 1 });
    try {
      expect(svc.service.listeningSockets).toBe(1);
      const port = Number(new URL(svc.service.url).port);
      const result = await acceptBurst(svc.service.server, port);
      expect(result.accepted).toBe(burst);
      expect(result.maxPerTurn).toBe(1);
      expect(result.turns).toBe(burst);
    } finally {
      await svc.close();
    }
  }, 90_000);

  it('closed, refuses new connections on every handle (none hangs in a queue no one accepts)', async () => {
    const svc = await inProcessService();
    const port = Number(new URL(svc.service.url).port);
    expect(await refused(port)).toBe(false);
    await svc.close();
    for (let attempt = 0; attempt < 20; attempt += 1) expect(await refused(port)).toBe(true);
  }, 90_000);
});

describe('descriptor copies of one listening socket (the path where the runtime has no SO_REUSEPORT)', () => {
  it('listens on 4 descriptors of one socket, accepts several per turn, and closed refuses connections', async () => {
    const server = createServer((_req, res) => res.end('ok'));
    const lines: string[] = [];
    const listening = await listenOn(server, {
      port: 0,
      host: '127.0.0.1',
      backlog: 4096,
      sockets: 4,
      reusePort: false,
      log: (line) => lines.push(line),
    });
    try {
      expect(lines).toEqual([]);
      expect(listening).toMatchObject({ sockets: 4, mode: 'copies' });
      const result = await acceptBurst(server, listening.port);
      expect(result.failed).toBe(0);
      expect(result.accepted).toBe(burst);
      // Every copy took some of the burst, several a turn.
      expect(listening.acceptedByExtras()).toHaveLength(3);
      for (const count of listening.acceptedByExtras()) expect(count).toBeGreaterThan(0);
      expect(result.maxPerTurn).toBeGreaterThan(1);
      expect(result.turns).toBeLessThan(burst / 2);
      expect(result.allowHalfOpen).toBe(true);
      // Served by the HTTP server whichever descriptor accepted them.
      const bodies = await Promise.all(
        Array.from({ length: 32 }, () =>
          fetch(`http://127.0.0.1:${listening.port}/`, { headers: { connection: 'close' } }).then((res) =>
            res.text(),
          ),
        ),
      );
      expect(bodies).toEqual(Array(32).fill('ok'));
    } finally {
      await listening.close();
      await closeServer(server);
    }
    expect(await refused(listening.port)).toBe(true);
  }, 90_000);

  it('a rolling shutdown drains every handle: server.close() waits for calls in flight that a copy accepted', async () => {
    let finished = 0;
    let started = 0;
    const server = createServer((_req, res) => {
      started += 1;
      res.on('finish', () => (finished += 1));
      setTimeout(() => res.end('done'), 700);
    });
    const listening = await listenOn(server, {
      port: 0,
      host: '127.0.0.1',
      backlog: 64,
      sockets: 4,
      reusePort: false,
    });
    expect(listening.sockets).toBe(4);
    const answered: string[] = [];
    const calls = Array.from({ length: 24 }, () =>
      fetch(`http://127.0.0.1:${listening.port}/`, { headers: { connection: 'close' } })
        .then((res) => res.text())
        .then(
          (body) => answered.push(body),
          (error: Error) => answered.push(`failed: ${error.message}`),
        ),
    );
    // Every call accepted (by whichever handle) and in flight.
    const deadline = Date.now() + 20_000;
    while (started < 24 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(started).toBe(24);
    expect(listening.acceptedByExtras().reduce((sum, count) => sum + count, 0)).toBeGreaterThan(0);
    // The HTTP server counts them all as its own, the copies' included: what server.close() waits for.
    expect(await connectionsOf(server)).toBe(24);
    await listening.close();
    let closedAfter = -1;
    await new Promise<void>((resolve) =>
      server.close(() => {
        closedAfter = finished;
        resolve();
      }),
    );
    await Promise.all(calls);
    expect(answered).toEqual(Array(24).fill('done'));
    // The HTTP server closed once every call was answered, the copies' included.
    expect(closedAfter).toBe(24);
    expect(await refused(listening.port)).toBe(true);
  }, 90_000);

  it('control: a connection given by another net.Server without being counted is not waited for by server.close()', async () => {
    let finished = 0;
    const server = createServer((_req, res) => {
      res.on('finish', () => (finished += 1));
      setTimeout(() => res.end('done'), 700);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const other = createNetServer((connection) => server.emit('connection', connection));
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const port = (other.address() as { port: number }).port;
    const answered: string[] = [];
    const call = fetch(`http://127.0.0.1:${port}/`).then(
      (res) => res.text().then((body) => answered.push(body)),
      (error: Error) => answered.push(`failed: ${error.message}`),
    );
    await untilConnected(other);
    other.close();
    let closedAfter = -1;
    await new Promise<void>((resolve) =>
      server.close(() => {
        closedAfter = finished;
        resolve();
      }),
    );
    expect(closedAfter).toBe(0);
    await call;
    server.closeAllConnections();
  }, 90_000);

  it('a request taken before the handler is attached waits for it (the port listens first)', async () => {
    const server = createServer();
    const listening = await listenOn(server, {
      port: 0,
      host: '127.0.0.1',
      backlog: 64,
      sockets: 4,
      reusePort: false,
    });
    try {
      const answer = fetch(`http://127.0.0.1:${listening.port}/`, {
        signal: AbortSignal.timeout(20_000),
      }).then((res) => res.text());
      await untilConnected(server);
      await new Promise((r) => setTimeout(r, 200));
      server.on('request', (_req, res) => res.end('late'));
      expect(await answer).toBe('late');
    } finally {
      await listening.close();
      await closeServer(server);
    }
  }, 90_000);

  it('control: on a bare server the same request is never answered', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const answer = fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(2500) }).then(
        (res) => res.text(),
        (error: Error) => `failed: ${error.name}`,
      );
      await untilConnected(server);
      await new Promise((r) => setTimeout(r, 200));
      server.on('request', (_req, res) => res.end('late'));
      expect(await answer).toBe('failed: TimeoutError');
    } finally {
      await closeServer(server);
    }
  }, 90_000);

  it('control: a descriptor copy left open keeps the port taking connections that no one accepts', async () => {
    const server = createServer();
    const listening = await listenOn(server, {
      port: 0,
      host: '127.0.0.1',
      backlog: 64,
      sockets: 2,
      reusePort: false,
    });
    expect(listening.sockets).toBe(2);
    // The HTTP server's own descriptor closed, the copy not (what a leak would leave): the kernel still
    // completes connections to the port.
    await closeServer(server);
    try {
      expect(await refused(listening.port)).toBe(false);
    } finally {
      await listening.close();
    }
    expect(await refused(listening.port)).toBe(true);
  }, 90_000);

  it('falls back to one socket, saying why, when the helper process cannot make the copies in time', async () => {
    const server = createServer((_req, res) => res.end('ok'));
    const lines: string[] = [];
    const listening = await listenOn(server, {
      port: 0,
      host: '127.0.0.1',
      backlog: 64,
      sockets: 4,
      reusePort: false,
      copyTimeoutMs: 1,
      log: (line) => lines.push(line),
    });
    try {
      expect(listening).toMatchObject({ sockets: 1, mode: 'none' });
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/listening on 1 socket instead of 4: .*took more than 1 ms/);
      const res = await fetch(`http://127.0.0.1:${listening.port}/`);
      expect(await res.text()).toBe('ok');
    } finally {
      await listening.close();
      await closeServer(server);
    }
    // Nothing left listening by the attempt (the helper killed, any copy received closed).
    expect(await refused(listening.port)).toBe(true);
  }, 90_000);
});
