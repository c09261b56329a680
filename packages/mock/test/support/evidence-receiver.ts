import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A small stand-in for the certification service's `POST /evidence` on 127.0.0.1, answering as the
 * service does: 200 (`{}` or an OTLP partialSuccess), 429 or 503 with Retry-After, 400 with a problem
 * body, or never (a hung service). It keeps every attempt (Idempotency-Key, Authorization, the parsed
 * OTLP/JSON body) and, like the service, takes a batch once: an Idempotency-Key answered 2xx before is
 * acknowledged again without being taken twice.
 */

export type ReceiverMode =
  | { kind: 'ok'; rejected?: number }
  | { kind: 'busy'; status: 429 | 503; retryAfter?: string }
  | { kind: 'refuse'; status: number }
  | { kind: 'hang' };

export interface Attempt {
  readonly idempotencyKey: string | undefined;
  readonly authorization: string | undefined;
  readonly contentType: string | undefined;
  readonly body: OtlpLogs;
  readonly status: number | 'hung';
}

export interface OtlpAttribute {
  key: string;
  value: {
    stringValue?: string;
    intValue?: string;
    arrayValue?: { values: Array<{ stringValue?: string }> };
  };
}
export interface OtlpLogs {
  resourceLogs: Array<{
    resource: { attributes: OtlpAttribute[] };
    scopeLogs: Array<{
      scope: { name: string };
      logRecords: Array<{ timeUnixNano: string; attributes: OtlpAttribute[] }>;
    }>;
  }>;
}

export interface EvidenceReceiver {
  readonly url: string;
  /** What the next attempts get; change it between requests. */
  mode: ReceiverMode;
  readonly attempts: Attempt[];
  /** Batches taken (2xx), by Idempotency-Key, in order; a repeat of a key is not taken again. */
  readonly taken: Map<string, OtlpLogs>;
  /** Requests held open now (mode hang). */
  readonly held: Set<ServerResponse>;
  close(): Promise<void>;
}

/** A log record's attributes as a plain object (intValue as a number, an array of strings as one). */
export function attributesOf(attributes: OtlpAttribute[]): Record<string, string | number | string[]> {
  return Object.fromEntries(
    attributes.map(({ key, value }) => [
      key,
      value.intValue !== undefined
        ? Number(value.intValue)
        : value.arrayValue !== undefined
          ? value.arrayValue.values.map((item) => item.stringValue ?? '')
          : (value.stringValue ?? ''),
    ]),
  );
}

/** Every log record the receiver took, as attribute objects, in order. */
export function takenRecords(receiver: EvidenceReceiver): Array<Record<string, string | number | string[]>> {
  return [...receiver.taken.values()].flatMap((body) =>
    body.resourceLogs.flatMap((resource) =>
      resource.scopeLogs.flatMap((scope) =>
        scope.logRecords.map((record) => attributesOf(record.attributes)),
      ),
    ),
  );
}

export async function startEvidenceReceiver(mode: ReceiverMode = { kind: 'ok' }): Promise<EvidenceReceiver> {
  const held = new Set<ServerResponse>();
  const receiver: EvidenceReceiver = {
    url: '',
    mode,
    attempts: [],
    taken: new Map(),
    held,
    close,
  };
  const read = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    });
  const server: Server = createServer(async (req, res) => {
    const text = await read(req);
    const key = req.headers['idempotency-key'];
    const current = receiver.mode;
    const status =
      current.kind === 'ok'
        ? 200
        : current.kind === 'busy' || current.kind === 'refuse'
          ? current.status
          : 'hung';
    receiver.attempts.push({
      idempotencyKey: typeof key === 'string' ? key : undefined,
      authorization: req.headers.authorization,
      contentType: req.headers['content-type'],
      body: JSON.parse(text) as OtlpLogs,
      status,
    });
    if (current.kind === 'hang') {
      held.add(res);
      res.on('close', () => held.delete(res));
      return;
    }
    if (current.kind === 'busy') {
      res.writeHead(current.status, {
        'content-type': 'application/problem+json',
        ...(current.retryAfter === undefined ? {} : { 'retry-after': current.retryAfter }),
      });
      return void res.end('{"title":"busy"}');
    }
    if (current.kind === 'refuse') {
      res.writeHead(current.status, { 'content-type': 'application/problem+json' });
      return void res.end('{"title":"the batch is not OTLP logs"}');
    }
    if (typeof key === 'string' && !receiver.taken.has(key))
      receiver.taken.set(key, JSON.parse(text) as OtlpLogs);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify(
        current.rejected
          ? { partialSuccess: { rejectedLogRecords: String(current.rejected), errorMessage: 'bad path' } }
          : {},
      ),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  (receiver as { url: string }).url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/evidence`;
  // A test server stops by itself, whatever the test does.
  const timer = setTimeout(() => void close(), 120_000);
  timer.unref();
  let closing: Promise<void> | undefined;
  function close(): Promise<void> {
    clearTimeout(timer);
    closing ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    return closing;
  }
  return receiver;
}
