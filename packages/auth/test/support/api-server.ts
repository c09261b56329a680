import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ApiRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  body: string;
}

export type ApiHandler = (request: ApiRequest) => {
  status: number;
  headers?: Record<string, string>;
  body?: string;
};

/** A resource server on 127.0.0.1 that records requests and answers with queued handlers (default 200). */
export async function startApiServer() {
  const requests: ApiRequest[] = [];
  const queue: ApiHandler[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request: ApiRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        authorization: req.headers.authorization,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(request);
      const handler: ApiHandler = queue.shift() ?? (() => ({ status: 200, body: '{"ok":true}' }));
      const reply = handler(request);
      res
        .writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers })
        .end(reply.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    next: (...handlers: ApiHandler[]) => {
      queue.push(...handlers);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
