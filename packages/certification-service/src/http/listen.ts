import { spawn } from 'node:child_process';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createNetServer, type Server as NetServer } from 'node:net';
import { InternalError } from '../errors.js';
import type { LogLine } from '../observability/logger.js';

/** How long the helper process that copies the listening socket's descriptor may take, by default. */
export const defaultCopyTimeoutMs = 10_000;

/** How `listenOn` listens. */
export interface ListenOptions {
  port: number;
  host: string;
  backlog: number;
  sockets: number;
  /** Where the reason goes when fewer handles than asked listen. Default stderr. */
  log?: LogLine;
  /** Bound on the helper process of the descriptor copies (ms). Default `defaultCopyTimeoutMs`. */
  copyTimeoutMs?: number;
  /** Try SO_REUSEPORT first (default true; false: descriptor copies only, to test them anywhere). */
  reusePort?: boolean;
}

/** The port `listenOn` listens on, and its handles. */
export interface Listening {
  port: number;
  /** Handles listening on the port, `server`'s included. */
  sockets: number;
  /** How the extra handles were had: `reuseport`, `copies` (of one socket's descriptor), `none`. */
  mode: 'reuseport' | 'copies' | 'none';
  /** Connections each extra handle (all but `server`'s own) has accepted so far. */
  acceptedByExtras(): number[];
  close(): Promise<void>;
}

/**
 * Listens for `server` on `sockets` listening handles on one port, where libuv accepts one connection
 * per handle per turn of the event loop:
 *
 * - where the runtime supports SO_REUSEPORT (Node ≥ 22.12 and 23.1, on Linux): `sockets` sockets bound
 *   to the port, the kernel spreading new connections over them;
 * - elsewhere (Node 20): `sockets` file descriptors of the one listening socket, each polled by its own
 *   handle (see `copyListeningHandle`); they share the socket's accept queue;
 * - if neither can be had, one socket, the reason logged (never a failure to start).
 *
 * Why: libuv (since 1.45, Node 20) accepts one connection per listening handle per turn of the event
 * loop. While the thread is busy serving calls, a turn takes tens of milliseconds, so a burst of new
 * connections (many partners' programs starting together) waits in the kernel's queue for seconds,
 * where as many local stages, one socket each, take theirs many times faster. Every connection is
 * served by the same HTTP server (`server.emit('connection')`, with the HTTP server's socket options),
 * so nothing else changes.
 *
 * `close()` stops accepting on every handle but `server`'s own (closed by `server.close()`), at once;
 * the connections they accepted are counted as the HTTP server's, so `server.close()` waits for them.
 */
export async function listenOn(server: Server, options: ListenOptions): Promise<Listening> {
  const { host, backlog } = options;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const wanted = Math.max(1, Math.floor(options.sockets));
  const reusePort = wanted > 1 && options.reusePort !== false;
  const listen = (target: Server | NetServer, port: number) =>
    new Promise<void>((resolve, reject) => {
      target.once('error', reject);
      // `reusePort` is ignored by a runtime that does not know it: the next socket then fails to bind.
      target.listen({ port, host, backlog, ...(reusePort && { reusePort: true }) }, () => {
        target.off('error', reject);
        resolve();
      });
    });
  holdEarlyRequests(server);
  await listen(server, options.port);
  const port = (server.address() as { port: number }).port;
  const accepted = new Map<NetServer, number>();
  const extraServer = () => extraListener(server, accepted);
  let mode: Listening['mode'] = 'none';
  const extra = reusePort
    ? await reusePortSockets(wanted - 1, extraServer, (socket) => listen(socket, port))
    : [];
  if (extra.length > 0) mode = 'reuseport';
  if (wanted > 1 && extra.length === 0) {
    try {
      const timeoutMs = options.copyTimeoutMs ?? defaultCopyTimeoutMs;
      extra.push(...(await copiedSockets(server, wanted - 1, { port, backlog, timeoutMs }, extraServer)));
      mode = 'copies';
    } catch (error) {
      log(
        `listening on 1 socket instead of ${wanted}: this runtime has no SO_REUSEPORT and copying the listening socket's descriptor failed (${(error as Error).message}); under a burst of new connections they are accepted one per turn of the event loop`,
        { event: 'listen_sockets_fallback', wanted, reason: (error as Error).message },
      );
    }
  } else if (wanted > 1 && extra.length + 1 < wanted) {
    log(
      `listening on ${extra.length + 1} sockets instead of ${wanted}: a further SO_REUSEPORT socket failed to bind`,
      {
        event: 'listen_sockets_fallback',
        wanted,
        listening: extra.length + 1,
      },
    );
  }
  return {
    port,
    sockets: 1 + extra.length,
    acceptedByExtras: () => extra.map((socket) => accepted.get(socket) ?? 0),
    mode,
    close: async () => {
      // net.Server#close closes the listening descriptor at once; the connections it accepted are the
      // HTTP server's (see extraListener), which `server.close()` waits for.
      for (const socket of extra) if (socket.listening) socket.close();
    },
  };
}

/**
 * A listening handle whose connections are the HTTP server's: same socket options (half-open allowed,
 * no Nagle delay...), as if it had accepted them itself; each one it accepts is counted in `accepted`.
 */
function extraListener(server: Server, accepted: Map<NetServer, number>): NetServer {
  // (Fields net.Server keeps from its options, not in its typings; HTTP's defaults where missing.)
  const own = server as unknown as Partial<
    Record<'allowHalfOpen' | 'pauseOnConnect' | 'noDelay' | 'keepAlive', boolean>
  > & {
    keepAliveInitialDelay?: number;
    highWaterMark?: number;
  };
  const socket = createNetServer({
    allowHalfOpen: own.allowHalfOpen ?? true,
    pauseOnConnect: own.pauseOnConnect ?? false,
    noDelay: own.noDelay ?? true,
    keepAlive: own.keepAlive ?? false,
    keepAliveInitialDelay: own.keepAliveInitialDelay ?? 0,
    ...(own.highWaterMark !== undefined && { highWaterMark: own.highWaterMark }),
  });
  socket.on('connection', (connection) => {
    accepted.set(socket, (accepted.get(socket) ?? 0) + 1);
    // The connection is the HTTP server's as if it had accepted it: counted in its connections, so
    // that `server.close()` waits for it as for its own (a rolling shutdown drains every handle's
    // calls), and no longer in this server's. (`_connections`, `_server`: net's own bookkeeping,
    // which a closing socket updates; the same in Node 20, 22 and 24.)
    const moved = socket as unknown as { _connections: number };
    const to = server as unknown as { _connections: number };
    const conn = connection as unknown as { _server: unknown; server: unknown };
    if (
      typeof moved._connections === 'number' &&
      typeof to._connections === 'number' &&
      conn._server === socket
    ) {
      moved._connections -= 1;
      to._connections += 1;
      conn._server = server;
      conn.server = server;
    }
    server.emit('connection', connection);
  });
  return socket;
}

/** Up to `count` further sockets bound to the port through SO_REUSEPORT: as many as bind, in turn. */
async function reusePortSockets(
  count: number,
  extraServer: () => NetServer,
  listen: (socket: NetServer) => Promise<void>,
): Promise<NetServer[]> {
  const sockets: NetServer[] = [];
  for (let index = 0; index < count; index += 1) {
    const socket = extraServer();
    try {
      await listen(socket);
    } catch {
      // No SO_REUSEPORT here (EADDRINUSE).
      break;
    }
    sockets.push(socket);
  }
  return sockets;
}

/**
 * `count` handles listening on copies of `server`'s socket descriptor (see `copyListeningHandle`), or
 * a rejection saying why, with every handle and copy closed.
 */
async function copiedSockets(
  server: Server,
  count: number,
  at: { port: number; backlog: number; timeoutMs: number },
  extraServer: () => NetServer,
): Promise<NetServer[]> {
  const { port, backlog } = at;
  const handles = await copyListeningHandle(server, count, at.timeoutMs);
  const sockets: NetServer[] = [];
  try {
    for (const handle of handles) {
      const socket = extraServer();
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject);
        // The backlog given again: listen(2) on a descriptor of the socket sets the socket's backlog.
        socket.listen(handle, backlog, () => {
          socket.off('error', reject);
          resolve();
        });
      });
      sockets.push(socket);
      const address = socket.address();
      if (typeof address !== 'object' || address === null || address.port !== port) {
        throw new InternalError(`a copy listens on ${JSON.stringify(address)}, not on port ${port}`);
      }
    }
    return sockets;
  } catch (error) {
    for (const socket of sockets.splice(0)) socket.close();
    for (const handle of handles) closeRawHandle(handle);
    throw error;
  }
}

// What the helper process runs: it takes the listening socket's handle (a raw handle: it never listens
// or accepts on it, never even polls it), sends it back `count` times, each send giving the parent a new
// descriptor of the socket (SCM_RIGHTS), then exits. Bounded by `timeout` whatever happens.
const helperScript = `
const [count, timeout] = process.argv.slice(1).map(Number);
setTimeout(() => process.exit(3), timeout).unref();
process.on('disconnect', () => process.exit(0));
process.on('message', (message, handle) => {
  if (message !== 'copy' || !handle) process.exit(2);
  let left = count;
  const next = (error) => {
    if (error) process.exit(4);
    if (left-- === 0) return process.disconnect();
    process.send('copy', handle, next);
  };
  next();
});
`;

/**
 * `count` new file descriptors of `server`'s listening socket, each a raw handle (not listening yet).
 * Node has no dup(2), but each handle passed over an IPC channel arrives as a new descriptor: a
 * short-lived helper process takes the socket's handle and sends it back `count` times. It is bounded
 * by `timeoutMs` (killed past it) and has exited when this resolves, so that no other process holds
 * the socket (closing every descriptor here refuses new connections). Rejects, saying why, on any
 * failure, every descriptor received closed.
 */
function copyListeningHandle(server: Server, count: number, timeoutMs: number): Promise<object[]> {
  const handle = (server as unknown as { _handle?: object | null })._handle;
  if (handle === undefined || handle === null)
    return Promise.reject(new InternalError('the server has no listening handle'));
  const env = { ...process.env };
  // Nothing the service's own process was started with (a loader, a profiler...) in the helper.
  delete env.NODE_OPTIONS;
  return new Promise((resolve, reject) => {
    const received: object[] = [];
    let failure: Error | undefined;
    let stderr = '';
    const child = spawn(process.execPath, ['-e', helperScript, String(count), String(timeoutMs)], {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      env,
      serialization: 'json',
      windowsHide: true,
    });
    const fail = (error: Error) => {
      failure ??= error;
      child.kill('SIGKILL');
    };
    const timer = setTimeout(
      () => fail(new InternalError(`the helper process took more than ${timeoutMs} ms`)),
      timeoutMs,
    );
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      if (stderr.length < 2000) stderr += chunk;
    });
    child.on('error', (error) => fail(new InternalError(`the helper process: ${error.message}`)));
    child.on('message', (message, copy) => {
      if (message === 'copy' && copy) received.push(copy);
      else fail(new InternalError(`the helper process sent ${JSON.stringify(message)} without a handle`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (failure === undefined && received.length !== count) {
        failure = new InternalError(
          `the helper process exited (${signal ?? `code ${code}`}) having sent ${received.length} of ${count} handles${stderr ? `: ${stderr.trim().slice(0, 500)}` : ''}`,
        );
      }
      if (failure !== undefined) {
        for (const copy of received) closeRawHandle(copy);
        reject(failure);
      } else resolve(received);
    });
    try {
      child.send('copy', handle as Parameters<typeof child.send>[1], (error) => {
        if (error) fail(new InternalError(`sending the handle to the helper process: ${error.message}`));
      });
    } catch (error) {
      fail(new InternalError(`sending the handle to the helper process: ${(error as Error).message}`));
    }
  });
}

function closeRawHandle(handle: object): void {
  try {
    (handle as { close?: () => void }).close?.();
  } catch {
    // Already closed.
  }
}

/**
 * Requests that arrive before `server` has a 'request' listener wait for the first one to be added,
 * then go to it. The port is listening (and, with the descriptor copies, a helper process runs for a
 * moment) before the caller has attached its handler; a connection taken in that window, which a
 * load balancer that retries a refused port sends at once, would otherwise never be answered.
 */
function holdEarlyRequests(server: Server): void {
  if (server.listenerCount('request') > 0) return;
  const early: [IncomingMessage, ServerResponse][] = [];
  const hold = (req: IncomingMessage, res: ServerResponse) => {
    if (server.listenerCount('request') === 1) early.push([req, res]);
  };
  const onNewListener = (event: string | symbol) => {
    if (event !== 'request') return;
    server.off('newListener', onNewListener);
    // Once the new listener is in place (it is added after this event).
    queueMicrotask(() => {
      server.off('request', hold);
      for (const [req, res] of early.splice(0)) server.emit('request', req, res);
    });
  };
  server.on('request', hold);
  server.on('newListener', onNewListener);
}
