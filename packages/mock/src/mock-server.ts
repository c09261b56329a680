import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { type RequestTarget, sendJson, splitTarget } from './http-io.js';
import { type LoggedRequest, type RequestLog, redactAuthorization, redactTarget } from './request-log.js';

/** What a handler learnt about a request, for the request log. */
export interface Exchange {
  error?: string;
  partnerId?: string;
}

export type Handler = (
  req: IncomingMessage,
  res: ServerResponse,
  exchange: Exchange,
  target: RequestTarget,
) => Promise<void>;

export interface ServerOptions {
  readonly name: 'auth' | 'api';
  readonly handler: Handler;
  readonly log: RequestLog;
  readonly clock: () => number;
  readonly requestTimeoutMs: number;
}

/** A node:http server that logs every answer (redacted) and never lets a handler error escape. */
export function createMockServer(options: ServerOptions): Server {
  const { requestTimeoutMs } = options;
  const server = createServer(
    {
      requestTimeout: requestTimeoutMs,
      headersTimeout: requestTimeoutMs,
      // Timeouts are enforced at this interval; keep it well under the timeout.
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(requestTimeoutMs / 4))),
      keepAliveTimeout: 5000,
      maxHeaderSize: 16 * 1024,
    },
    (req, res) => {
      const exchange: Exchange = {};
      const at = options.clock();
      res.on('finish', () => {
        const entry: LoggedRequest = {
          at,
          server: options.name,
          method: req.method ?? '',
          target: redactTarget(req.url ?? ''),
          status: res.statusCode,
          ...(req.headers.authorization !== undefined && {
            authorization: redactAuthorization(req.headers.authorization),
          }),
          ...(exchange.error !== undefined && { error: exchange.error }),
          ...(exchange.partnerId !== undefined && { partnerId: exchange.partnerId }),
        };
        options.log.add(entry);
      });
      const target = splitTarget(req.url);
      if (!target) {
        exchange.error = 'invalid_request';
        return sendJson(res, 400, {
          error: 'invalid_request',
          error_description: 'the request target is malformed',
        });
      }
      options.handler(req, res, exchange, target).catch(() => {
        // Reached only through the api-crash-on-malformed-header fault: answer 500 like a crash would.
        exchange.error = 'server_error';
        sendJson(res, 500, { error: 'server_error', error_description: 'internal error' });
      });
    },
  );
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable || error.code === 'ECONNRESET') return void socket.destroy();
    const status = error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? '408 Request Timeout' : '400 Bad Request';
    const large = error.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large' : status;
    socket.end(`HTTP/1.1 ${large}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  });
  return server;
}

/** Listens on host:port (0 = random) and answers the bound port. */
export function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : port);
    });
  });
}

export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
