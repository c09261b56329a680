import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface TestServer {
  /** e.g. http://127.0.0.1:41234 (no trailing slash) */
  url: string;
  seen: SeenRequest[];
  close(): Promise<void>;
}

/** A real HTTP server on 127.0.0.1 with a random port. The handler sees the request with its body read. */
export async function startServer(
  handler: (request: SeenRequest, response: ServerResponse) => unknown,
): Promise<TestServer> {
  const seen: SeenRequest[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const request = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
    };
    seen.push(request);
    try {
      await handler(request, res);
    } catch (error) {
      res.statusCode = 599;
      res.end(String(error));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function json(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}

/** A sleep that records the delays and returns at once, so retry tests never wait. */
export function recordingSleep() {
  const delays: number[] = [];
  const sleep = async (ms: number, signal: AbortSignal) => {
    if (signal.aborted) throw signal.reason;
    delays.push(ms);
  };
  return { delays, sleep };
}
