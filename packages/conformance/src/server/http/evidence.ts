import { AsyncLocalStorage } from 'node:async_hooks';
import type { Evidence } from '../../common/evidence.js';
import type { Redactor } from '../../common/redact.js';
import type { Exchange } from './exchange.js';

const requestHeaderNames = ['authorization', 'content-type'];
const responseHeaderNames = ['content-type', 'www-authenticate', 'cache-control', 'location'];

const cut = (text: string, max = 300) =>
  text.length > max ? `${text.slice(0, max)}…[${text.length} chars]` : text;

function bodyOf(exchange: Exchange): string | undefined {
  const { request } = exchange;
  if (request.form !== undefined) return new URLSearchParams(request.form.map(([k, v]) => [k, v])).toString();
  if (request.json !== undefined) return JSON.stringify(request.json);
  return request.body;
}

/** The evidence record of an exchange. */
export function toEvidence(exchange: Exchange, redactor: Redactor): Evidence {
  const redact = (text: string) => redactor.redact(text);
  const requestHeaders: Record<string, string> = {};
  for (const name of requestHeaderNames) {
    const value = exchange.request.headers?.[name];
    if (value !== undefined) requestHeaders[name] = cut(redact(value), 120);
  }
  const responseHeaders: Record<string, string> = {};
  for (const name of responseHeaderNames) {
    const value = exchange.headers.get(name);
    if (value !== null) responseHeaders[name] = cut(redact(value), 300);
  }
  const body = bodyOf(exchange);
  return {
    method: exchange.request.method,
    url: redact(exchange.request.url),
    requestHeaders,
    ...(body === undefined ? {} : { requestBody: cut(redact(body)) }),
    status: exchange.status,
    responseHeaders,
    responseBody:
      exchange.truncatedAt === undefined
        ? cut(redact(exchange.text.slice(0, 4000)))
        : `${cut(redact(exchange.text.slice(0, 4000)))} [body over ${exchange.truncatedAt} bytes: the suite stopped reading]`,
  };
}

/**
 * The exchanges of the check being run: every request a check sends lands here (the probe records it),
 * and so does every shared answer it judges (`CheckContext.cite`). Checks run concurrently; the
 * async context keeps each check's list apart.
 */
export const evidenceScope = new AsyncLocalStorage<Set<Exchange>>();

/** Notes that the running check judged `exchange`. */
export function cite(exchange: Exchange | undefined): void {
  if (exchange) evidenceScope.getStore()?.add(exchange);
}
