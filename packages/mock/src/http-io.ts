import type { IncomingMessage, ServerResponse } from 'node:http';

/** Largest request body the servers accept: 1 MiB. */
export const bodyLimitBytes = 1024 * 1024;
// Past this many bytes a body is no longer drained but the connection is closed.
const drainLimitBytes = 64 * 1024 * 1024;

/** Deepest JSON nesting (objects and arrays) the servers parse: 64 levels. */
export const jsonDepthLimit = 64;

/**
 * Whether a JSON text nests objects/arrays deeper than `max`, by one pass over the text (strings
 * skipped). Run before JSON.parse: a deep enough structure parses, but serialising it again throws.
 */
export function exceedsJsonDepth(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === 0x5c)
        index += 1; // backslash: skip the escaped character
      else if (code === 0x22) inString = false;
    } else if (code === 0x22) inString = true;
    else if (code === 0x7b || code === 0x5b) {
      depth += 1;
      if (depth > max) return true;
    } else if (code === 0x7d || code === 0x5d) depth -= 1;
  }
  return false;
}

export type BodyResult = { kind: 'ok'; body: Buffer } | { kind: 'too-large' } | { kind: 'aborted' };

/**
 * Reads a request body up to `limit` bytes. A larger body is drained and discarded (so that the
 * client can read the 413 answer) up to 64 MiB, then the connection is closed.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<BodyResult> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = (result: BodyResult) => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else if (size > drainLimitBytes) {
        req.destroy();
        finish({ kind: 'aborted' });
      }
    });
    req.on('end', () =>
      finish(size > limit ? { kind: 'too-large' } : { kind: 'ok', body: Buffer.concat(chunks) }),
    );
    req.on('error', () => finish({ kind: 'aborted' }));
    req.on('close', () => finish({ kind: 'aborted' }));
  });
}

/** Sends a JSON answer (Content-Type: application/json, a media type the spec documents). */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  sendJsonText(res, status, JSON.stringify(body), headers);
}

/** Sends an already serialised JSON answer. */
export function sendJsonText(
  res: ServerResponse,
  status: number,
  json: Buffer | string,
  headers: Record<string, string> = {},
  length = Buffer.byteLength(json),
): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { ...headers, 'Content-Type': 'application/json', 'Content-Length': length });
  res.end(json);
}

/** The media type of a Content-Type header, lower-cased without parameters. */
export function mediaType(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  return header.split(';')[0]!.trim().toLowerCase();
}

export interface RequestTarget {
  readonly pathname: string;
  readonly query: string;
}

/** Splits a raw request target into path and query; undefined for anything but origin-form. */
export function splitTarget(raw: string | undefined): RequestTarget | undefined {
  if (raw === undefined || !raw.startsWith('/')) return undefined;
  const index = raw.indexOf('?');
  return index === -1
    ? { pathname: raw, query: '' }
    : { pathname: raw.slice(0, index), query: raw.slice(index + 1) };
}
