import http from 'node:http';
import https from 'node:https';

/** The bounds of one delivery attempt. */
export interface DeliveryLimits {
  /** Time to open the connection (TCP and TLS). */
  connectTimeoutMs: number;
  /** Time from the connection to the end of the response. */
  responseTimeoutMs: number;
  /** Bytes of the response body read; the rest is not read (the connection is closed). */
  maxResponseBytes: number;
}

export const defaultDeliveryLimits: DeliveryLimits = {
  connectTimeoutMs: 5_000,
  responseTimeoutMs: 15_000,
  maxResponseBytes: 4_096,
};

export type AttemptOutcome =
  | { ok: boolean; status: number; excerpt: string; durationMs: number; error?: string }
  | { ok: false; status: null; excerpt: ''; durationMs: number; error: string };

/**
 * POSTs one delivery: no redirect is followed (a 3xx is a failure, retried like any other), the
 * connection and the response each have a deadline, and at most `maxResponseBytes` of the body are
 * read. Never throws: the outcome says what happened.
 */
export function postWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  limits: DeliveryLimits = defaultDeliveryLimits,
): Promise<AttemptOutcome> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    let settled = false;
    const finish = (outcome: AttemptOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(connectTimer);
      clearTimeout(responseTimer);
      resolve(outcome);
    };
    const failed = (error: string) =>
      finish({ ok: false, status: null, excerpt: '', durationMs: elapsed(), error });
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return failed('the registered URL is not a URL');
    }
    const payload = Buffer.from(body, 'utf8');
    const request = (target.protocol === 'https:' ? https : http).request(target, {
      method: 'POST',
      agent: false,
      headers: {
        ...headers,
        'content-type': 'application/json',
        'content-length': String(payload.length),
        'user-agent': 'partner-certification-service webhooks',
        connection: 'close',
      },
    });
    let connectTimer: NodeJS.Timeout | undefined = setTimeout(() => {
      request.destroy(new Error(`no connection within ${limits.connectTimeoutMs} ms`));
    }, limits.connectTimeoutMs);
    let responseTimer: NodeJS.Timeout | undefined;
    request.on('socket', (socket) => {
      const connected = () => {
        clearTimeout(connectTimer);
        connectTimer = undefined;
        responseTimer = setTimeout(() => {
          request.destroy(new Error(`no complete response within ${limits.responseTimeoutMs} ms`));
        }, limits.responseTimeoutMs);
      };
      if (socket.connecting)
        socket.once(target.protocol === 'https:' ? 'secureConnect' : 'connect', connected);
      else connected();
    });
    request.on('error', (error) => failed(error.message.slice(0, 300)));
    request.on('response', (response) => {
      const status = response.statusCode ?? 0;
      const chunks: Buffer[] = [];
      let size = 0;
      const done = (truncated: boolean) => {
        const excerpt = Buffer.concat(chunks).subarray(0, limits.maxResponseBytes).toString('utf8');
        const redirect = status >= 300 && status < 400;
        finish({
          ok: status >= 200 && status < 300,
          status,
          excerpt,
          durationMs: elapsed(),
          ...(redirect && {
            error: `a redirect (to ${String(response.headers.location ?? 'nowhere').slice(0, 200)}) is not followed`,
          }),
          ...(truncated &&
            !redirect && { error: `the response body was cut at ${limits.maxResponseBytes} bytes` }),
        });
        response.destroy();
      };
      response.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        if (size > limits.maxResponseBytes) done(true);
      });
      response.on('end', () => done(false));
      response.on('error', () => done(true));
    });
    request.end(payload);
  });
}
