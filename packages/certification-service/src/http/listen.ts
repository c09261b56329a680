import type { Server } from 'node:http';
import { createServer as createNetServer, type Server as NetServer } from 'node:net';

/**
 * Listens for `server` on `sockets` sockets bound to one port (SO_REUSEPORT), where the runtime allows
 * it (Node ≥ 22.12 and 23.1, on Linux), else on one.
 *
 * Why: libuv (since 1.45, Node 20) accepts one connection per listening socket per turn of the event
 * loop. While the thread is busy serving calls, a turn takes tens of milliseconds, so a burst of new
 * connections (many partners' programs starting together) waits in the kernel's queue for seconds,
 * where as many local stages, one socket each, take theirs many times faster. The kernel spreads new
 * connections over the sockets, each accepted in its turn, and every connection is served by the same
 * HTTP server (`server.emit('connection')`), so nothing else changes.
 */
export async function listenOn(
  server: Server,
  options: { port: number; host: string; backlog: number; sockets: number },
): Promise<{ port: number; sockets: number; close(): Promise<void> }> {
  const { host, backlog } = options;
  const reusePort = options.sockets > 1;
  const listen = (target: Server | NetServer, port: number) =>
    new Promise<void>((resolve, reject) => {
      target.once('error', reject);
      // `reusePort` is ignored by a runtime that does not know it: the next socket then fails to bind.
      target.listen({ port, host, backlog, ...(reusePort && { reusePort: true }) }, () => {
        target.off('error', reject);
        resolve();
      });
    });
  await listen(server, options.port);
  const port = (server.address() as { port: number }).port;
  const extra: NetServer[] = [];
  for (let index = 1; index < options.sockets; index += 1) {
    const socket = createNetServer();
    socket.on('connection', (connection) => server.emit('connection', connection));
    try {
      await listen(socket, port);
    } catch {
      // No SO_REUSEPORT here (EADDRINUSE): one socket.
      break;
    }
    extra.push(socket);
  }
  return {
    port,
    sockets: 1 + extra.length,
    close: () =>
      Promise.all(extra.map((socket) => new Promise<void>((resolve) => socket.close(() => resolve())))).then(
        () => undefined,
      ),
  };
}
