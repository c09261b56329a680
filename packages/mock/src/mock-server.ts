import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { BoundedCache } from './bounded-cache.js';
import { MockError } from './errors.js';
import { type RequestTarget, sendJson, splitTarget } from './http-io.js';
import { type RequestLog, redactAuthorization, redactTarget } from './request-log.js';

/**
 * What a handler learnt about a request, for the request log and the evidence report. The tokens here
 * live as long as the request: the log never sees them, evidence only as a keyed fingerprint.
 */
export interface Exchange {
  error?: string;
  partnerId?: string;
  /** The access token the API was shown (well-formed bearer credentials). */
  presented?: string;
  /** The partner a refused token names, when its signature verified (an expired token, say). */
  tokenPartnerId?: string;
  /** The token endpoint: the grant_type asked for (after client authentication), '' when none. */
  grantType?: string;
  /** The token endpoint: what a 200 issued. */
  issued?: { token: string; scope: string; expiresIn: number };
  /** The Retry-After the answer gave (headers given to writeHead are not readable afterwards). */
  retryAfter?: string;
}

/** One answered request, as the evidence reporter is told of it (after the answer went out). */
export interface ServedExchange {
  /** Epoch ms (the mock's clock) when the request arrived. */
  readonly at: number;
  readonly server: 'auth' | 'api';
  readonly method: string;
  /** The path as served, without the query. */
  readonly path: string;
  readonly status: number;
  /** The Retry-After the answer gave, if any. */
  readonly retryAfter: string | undefined;
  readonly exchange: Exchange;
}

export type Handler = (
  req: IncomingMessage,
  res: ServerResponse,
  exchange: Exchange,
  target: RequestTarget,
) => Promise<void>;

/** Thrown only under the api-crash-on-malformed-header fault, to produce the 500 it promises. */
export class InjectedCrash extends MockError {
  override readonly name: string = 'InjectedCrash';

  constructor(message: string) {
    super('ERR_MOCK_INJECTED_CRASH', message);
  }
}

export interface ServerOptions {
  readonly name: 'auth' | 'api';
  readonly handler: Handler;
  readonly log: RequestLog;
  readonly clock: () => number;
  readonly requestTimeoutMs: number;
  readonly headersTimeoutMs: number;
  /** Memoise the redaction of request targets and Authorization headers for the log. */
  readonly caches: boolean;
  /** Called with every error a handler let escape (a bug: the answer was a 500). */
  readonly onInternalError: (error: unknown) => void;
  /** Told of every answered request with an origin-form target (the evidence reporter). */
  readonly onServed?: ((served: ServedExchange) => void) | undefined;
}

/** A function's recent results, by argument (at most 256), for the arguments `worth` accepts. */
class Memo {
  readonly #cache = new BoundedCache<string, string>(256);
  readonly #compute: (value: string) => string;
  readonly #enabled: boolean;
  readonly #worth: (value: string) => boolean;

  constructor(
    compute: (value: string) => string,
    enabled: boolean,
    worth: (value: string) => boolean = () => true,
  ) {
    this.#compute = compute;
    this.#enabled = enabled;
    this.#worth = worth;
  }

  get(value: string): string {
    if (!this.#enabled || !this.#worth(value)) return this.#compute(value);
    let result = this.#cache.get(value);
    if (result === undefined) {
      result = this.#compute(value);
      this.#cache.set(value, result);
    }
    return result;
  }
}

/** After an error answer (400, 408, 431), how long the client may keep the connection: 1 s. */
export const clientErrorGraceMs = 1000;

/** How long an idle keep-alive connection stays open: 5 s. */
export const keepAliveTimeoutMs = 5000;

const internalErrorWatchers = new Set<(error: unknown) => void>();

/**
 * Calls `watcher` with every internal error of any mock server in this process, until the returned
 * function is called. The mock's test suite uses it to fail any test that reaches a 500.
 */
export function watchInternalErrors(watcher: (error: unknown) => void): () => void {
  internalErrorWatchers.add(watcher);
  return () => internalErrorWatchers.delete(watcher);
}

function internalError(res: ServerResponse, exchange: Exchange): void {
  exchange.error = 'server_error';
  if (res.headersSent) return void res.destroy();
  sendJson(res, 500, { error: 'server_error', error_description: 'internal error' });
}

/** A node:http server that logs every answer (redacted) and never lets a handler error escape. */
export function createMockServer(options: ServerOptions): Server {
  const { requestTimeoutMs, headersTimeoutMs } = options;
  const server = createServer(
    {
      requestTimeout: requestTimeoutMs,
      headersTimeout: Math.min(headersTimeoutMs, requestTimeoutMs),
      // Timeouts are enforced at this interval; keep it well under the timeout.
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(requestTimeoutMs / 4))),
      keepAliveTimeout: keepAliveTimeoutMs,
      maxHeaderSize: 16 * 1024,
    },
    (req, res) => {
      const exchange: Exchange = {};
      serve(req, res, exchange).catch((error: unknown) => {
        // The api-crash-on-malformed-header fault answers 500 on purpose; anything else is a bug.
        if (!(error instanceof InjectedCrash)) report(error);
        try {
          internalError(res, exchange);
        } catch {
          res.destroy();
        }
      });
    },
  );
  // The same clients send the same targets and tokens again and again: redact each value once.
  // Targets that might hold a credential are not kept either.
  const redactedTargets = new Memo(
    redactTarget,
    options.caches,
    (value) => !/token|secret|passw|assertion|key|code|client|jwt|auth|credential|eyJ|@/i.test(value),
  );
  // Bearer tokens only: Basic credentials (client secrets) are not kept, even in memory.
  const redactedAuthorizations = new Memo(redactAuthorization, options.caches, (value) =>
    /^bearer /i.test(value),
  );
  const report = (error: unknown) => {
    options.onInternalError(error);
    for (const watcher of internalErrorWatchers) watcher(error);
  };
  async function serve(req: IncomingMessage, res: ServerResponse, exchange: Exchange): Promise<void> {
    const at = options.clock();
    let target: RequestTarget | undefined;
    res.on('finish', () => {
      try {
        options.log.add({
          at,
          server: options.name,
          method: req.method ?? '',
          target: redactedTargets.get(req.url ?? ''),
          status: res.statusCode,
          ...(req.headers.authorization !== undefined && {
            authorization: redactedAuthorizations.get(req.headers.authorization),
          }),
          ...(exchange.error !== undefined && { error: exchange.error }),
          ...(exchange.partnerId !== undefined && { partnerId: exchange.partnerId }),
        });
        if (options.onServed !== undefined && target !== undefined) {
          const retryAfter = exchange.retryAfter ?? res.getHeader('retry-after');
          options.onServed({
            at,
            server: options.name,
            method: req.method ?? '',
            path: target.pathname,
            status: res.statusCode,
            retryAfter: retryAfter === undefined ? undefined : String(retryAfter),
            exchange,
          });
        }
      } catch (error) {
        report(error);
      }
    });
    target = splitTarget(req.url);
    if (!target) {
      exchange.error = 'invalid_request';
      return sendJson(res, 400, {
        error: 'invalid_request',
        error_description: 'the request target is malformed',
      });
    }
    await options.handler(req, res, exchange, target);
  }
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable || error.code === 'ECONNRESET') return void socket.destroy();
    const status = error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? '408 Request Timeout' : '400 Bad Request';
    const large = error.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large' : status;
    socket.end(`HTTP/1.1 ${large}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    // A client that never closes its side (a slowloris, say) would hold the connection open for
    // ever: close it anyway once it had a moment to read the answer.
    setTimeout(() => socket.destroy(), clientErrorGraceMs).unref();
  });
  // A client may half-close its side once the request is sent (socket.end()): node:http would then
  // abort the request and close the connection before the answer; keep it open until we answer.
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
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
