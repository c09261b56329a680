import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A proxy in front of the register server, on 127.0.0.1 (a random port), as an attacker between a
 * gate and the certification service would be: it passes requests through and captures every 200
 * answer to /register…, and can be told to answer with a captured one instead (a replay).
 */

export interface CapturedAnswer {
  readonly path: string;
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
}

export interface ReplayProxy {
  readonly url: string;
  readonly registerUrl: string;
  /** Every 200 answer to /register… that came through, oldest first. */
  readonly captured: CapturedAnswer[];
  /** Answer every request to /register… with this captured answer from now on; undefined: pass through. */
  replay(answer: CapturedAnswer | undefined): void;
  close(): Promise<void>;
}

const passedHeaders = ['content-type', 'etag', 'cache-control', 'www-authenticate'];

export async function startReplayProxy(target: string): Promise<ReplayProxy> {
  const captured: CapturedAnswer[] = [];
  let replaying: CapturedAnswer | undefined;

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const path = req.url ?? '/';
    const isRegister = path.startsWith('/register');
    if (isRegister && replaying !== undefined) {
      res.writeHead(200, replaying.headers);
      return res.end(replaying.body);
    }
    const headers: Record<string, string> = {};
    for (const name of ['authorization', 'accept', 'if-none-match']) {
      const value = req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const answer = await fetch(`${target}${path}`, { headers, redirect: 'manual' });
    const body = await answer.text();
    const out: Record<string, string> = {};
    for (const name of passedHeaders) {
      const value = answer.headers.get(name);
      if (value !== null) out[name] = value;
    }
    if (isRegister && answer.status === 200) captured.push({ path, body, headers: out });
    res.writeHead(answer.status, out);
    res.end(answer.status === 304 ? undefined : body);
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      res.writeHead(502);
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let closing: Promise<void> | undefined;
  return {
    url,
    registerUrl: `${url}/register`,
    captured,
    replay: (answer) => {
      replaying = answer;
    },
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
