import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RsaKeyPair } from '@partner-lending/mock';
import { generateKeyPair } from 'jose';

export interface TestServer {
  url: string;
  close(): Promise<void>;
}

/** A real HTTP server on 127.0.0.1, random port; it closes itself after 30 s if a test forgets. */
export async function startServer(
  handler: (req: IncomingMessage, res: ServerResponse, body: string) => void,
): Promise<TestServer> {
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => handler(req, res, body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const timer = setTimeout(() => server.close(), 30_000);
  timer.unref();
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        clearTimeout(timer);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port on 127.0.0.1 that nothing listens on (bound, then released). */
export async function closedPortUrl(): Promise<string> {
  const server = await startServer((_req, res) => res.end());
  await server.close();
  return server.url;
}

export function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** An io for the CLI's `main` that keeps what it writes to stdout and stderr (no environment). */
export function capturedIo() {
  let out = '';
  let err = '';
  return {
    io: {
      stdout: { write: (text: string) => (out += text) },
      stderr: { write: (text: string) => (err += text) },
      env: {},
    },
    out: () => out,
    err: () => err,
  };
}

/** Collects what a reporter writes. */
export function sink(isTTY = false) {
  const chunks: string[] = [];
  return { isTTY, write: (text: string) => chunks.push(text), text: () => chunks.join('') };
}

let signingKey: Promise<RsaKeyPair> | undefined;

/**
 * One RS256 pair for every embedded mock of a test file: a 2048-bit RSA key takes ~0.1–1 s to generate,
 * and the self-proof starts dozens of mocks. Each mock still names it by its own random kid, and the
 * checks' attacker keys are made apart from it, so sharing it hides nothing from a check.
 */
export function sharedSigningKey(): Promise<RsaKeyPair> {
  signingKey ??= generateKeyPair('RS256', { modulusLength: 2048 });
  return signingKey;
}

/**
 * A client-credentials token request in the form (RFC 6749 §4.4) to `tokenUrl`, with `more` parameters
 * (`scope`, `audience`): the answer as it comes.
 */
export function clientCredentialsRequest(
  tokenUrl: string,
  client: { clientId: string; clientSecret: string },
  more: Record<string, string> = {},
): Promise<Response> {
  return fetch(tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: client.clientId,
      client_secret: client.clientSecret,
      ...more,
    }),
  });
}
