import { EventEmitter } from 'node:events';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { RunningMock } from '@partner-lending/mock';
import { usageError } from '../../errors.js';
import { keptText } from './request-reader.js';
import type { StageAnswer } from './scenarios.js';

/** The stage's HTTP plumbing: listening, answering, and handing requests to the mock in process. */

export function listenOn(server: Server, host: string, port: number, what: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        usageError(
          error.code === 'EADDRINUSE'
            ? `${what} port ${port} is already in use on ${host}; choose another (${what === 'the partner API' ? '--port' : '--auth-port'}) or 0 for a random one`
            : `could not listen on ${host}:${port} for ${what}: ${error.message}`,
        ),
      ),
    );
    server.listen(port, host, () => {
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : port);
    });
  });
}

export const hostOf = (host: string) => (host.includes(':') ? `[${host}]` : host);

export function send(
  res: ServerResponse,
  status: number,
  headers: Record<string, string>,
  body: string,
): Promise<void> {
  return new Promise((resolve) => {
    res.writeHead(status, { ...headers, 'content-length': String(Buffer.byteLength(body)) });
    res.end(body, () => resolve());
    res.once('close', () => resolve());
  });
}

/**
 * The request again, as the mock reads it: its method, headers and socket, `target`, and the body already
 * read (its length in `content-length`: the stage may have rewritten it).
 */
function replayOf(req: IncomingMessage, target: string, body: Buffer): IncomingMessage {
  const headers = { ...req.headers };
  delete headers['transfer-encoding'];
  if (body.length > 0 || headers['content-length'] !== undefined)
    headers['content-length'] = String(body.length);
  return Object.assign(Readable.from(body.length > 0 ? [body] : []), {
    method: req.method,
    url: target,
    headers,
    rawHeaders: req.rawHeaders,
    httpVersion: req.httpVersion,
    socket: req.socket,
  }) as unknown as IncomingMessage;
}

/**
 * Hands an API call to the mock in process (no second HTTP hop: the mock answers on `res`), replaying
 * the body the stage already read, and keeps what the answer was for the record.
 */
export function dispatch(
  req: IncomingMessage,
  res: ServerResponse,
  target: string,
  body: Buffer,
  mock: RunningMock,
): Promise<StageAnswer> {
  const replay = replayOf(req, target, body);
  const kept: Buffer[] = [];
  let keptBytes = 0;
  const keep = (chunk: unknown) => {
    if (keptBytes >= keptText * 4 || chunk === undefined || chunk === null || typeof chunk === 'function')
      return;
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    kept.push(buffer);
    keptBytes += buffer.length;
  };
  let headArgument: Record<string, unknown> = {};
  const writeHead = res.writeHead.bind(res);
  const write = res.write.bind(res);
  const end = res.end.bind(res);
  res.writeHead = ((status: number, ...rest: unknown[]) => {
    const headers = rest.find((item) => typeof item === 'object' && item !== null);
    if (headers) headArgument = headers as Record<string, unknown>;
    return (writeHead as (...args: unknown[]) => ServerResponse)(status, ...rest);
  }) as typeof res.writeHead;
  res.write = ((chunk: unknown, ...rest: unknown[]) => {
    keep(chunk);
    return (write as (...args: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof res.write;
  res.end = ((chunk?: unknown, ...rest: unknown[]) => {
    keep(chunk);
    return (end as (...args: unknown[]) => ServerResponse)(chunk, ...rest);
  }) as typeof res.end;
  return new Promise((resolve) => {
    const done = () => {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries({ ...res.getHeaders(), ...headArgument }))
        if (value !== undefined)
          headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
      resolve({ status: res.statusCode, headers, body: Buffer.concat(kept).toString('utf8') });
    };
    res.once('finish', done);
    res.once('close', done);
    mock.handle('api', replay, res);
  });
}

/**
 * Hands a request to the mock's auth server or API in process and keeps the whole answer instead of
 * sending it (a token answer, or a stage that records each exchange before it answers): no second HTTP
 * hop, and nothing reaches the client until the stage sends it.
 */
export function dispatchBuffered(
  server: 'auth' | 'api',
  req: IncomingMessage,
  target: string,
  body: Buffer,
  mock: RunningMock,
): Promise<StageAnswer> {
  const replay = replayOf(req, target, body);
  return new Promise((resolve) => {
    const headers: Record<string, string> = {};
    const chunks: Buffer[] = [];
    const answer = Object.assign(new EventEmitter(), {
      statusCode: 200,
      headersSent: false,
      destroyed: false,
      writableEnded: false,
      setHeader(name: string, value: unknown) {
        headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
        return answer;
      },
      getHeader: (name: string) => headers[name.toLowerCase()],
      writeHead(status: number, ...rest: unknown[]) {
        answer.statusCode = status;
        const given = rest.find((item) => typeof item === 'object' && item !== null) as
          | Record<string, unknown>
          | undefined;
        for (const [name, value] of Object.entries(given ?? {}))
          if (value !== undefined) answer.setHeader(name, value);
        answer.headersSent = true;
        return answer;
      },
      write(chunk: unknown) {
        if (chunk !== undefined && chunk !== null && typeof chunk !== 'function')
          chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
        return true;
      },
      end(chunk?: unknown) {
        if (answer.writableEnded) return answer;
        answer.write(chunk);
        answer.headersSent = true;
        answer.writableEnded = true;
        delete headers['content-length'];
        resolve({ status: answer.statusCode, headers, body: Buffer.concat(chunks).toString('utf8') });
        answer.emit('finish');
        return answer;
      },
      destroy() {
        if (answer.writableEnded) return answer;
        answer.destroyed = true;
        answer.writableEnded = true;
        resolve({
          status: 502,
          headers: { 'content-type': 'application/json' },
          body: `{"error":"stage_error","error_description":"the ${server === 'api' ? 'API' : 'auth server'} dropped the call"}`,
        });
        answer.emit('close');
        return answer;
      },
    });
    mock.handle(server, replay, answer as unknown as ServerResponse);
  });
}
