import { ConfigurationError } from './errors.js';

/**
 * What openapi-fetch builds for each call, in place of a WHATWG `Request` (its `Request` option). A
 * `Request` costs an AbortSignal, a header list and a body stream of its own, and fetch copies it
 * again into one of its own: a quarter of the SDK's overhead over a raw fetch on a fast network (the
 * profile is in the bench). This holds what the transport needs, and fetch builds the one Request.
 */
export class CallRequest {
  readonly url: string;
  readonly method: string;
  readonly headers: Headers;
  /** The serialised body (JSON text), or null. */
  readonly body: string | null;
  readonly redirect: RequestRedirect;

  constructor(url: string | URL, init: RequestInit = {}) {
    this.url = String(url);
    this.method = (init.method ?? 'GET').toUpperCase();
    this.headers = init.headers instanceof Headers ? init.headers : new Headers(init.headers);
    const body = init.body;
    if (body !== undefined && body !== null && typeof body !== 'string') {
      throw new ConfigurationError('the SDK sends JSON bodies only (a string once serialised)');
    }
    this.body = body ?? null;
    this.redirect = init.redirect ?? 'follow';
  }

  /** The body as bytes (empty when there is none), as `Request.arrayBuffer()`. */
  async arrayBuffer(): Promise<ArrayBuffer> {
    return new TextEncoder().encode(this.body ?? '').buffer as ArrayBuffer;
  }
}
