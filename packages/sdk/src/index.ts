import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { paths } from './generated/openapi.js';

export type { components, operations, paths } from './generated/openapi.js';

/** The typed openapi-fetch client over the partner API paths of the spec. */
export type PartnerPathsClient = Client<paths>;

export interface PartnerClientOptions {
  /** Base address of the partner API, `{base_url}` (e.g. `https://partner-api.example`). */
  baseUrl: string;
  /** The fetch to send requests with. Default: `globalThis.fetch`. */
  fetch?: ClientOptions['fetch'];
  /** Headers sent with every request. */
  headers?: ClientOptions['headers'];
}

/**
 * Creates a typed client for the partner API. Paths, path parameters, query parameters and bodies
 * are checked against the spec at compile time.
 */
export function createPartnerClient(options: PartnerClientOptions): PartnerPathsClient {
  let base: URL;
  try {
    base = new URL(options.baseUrl);
  } catch (cause) {
    throw new TypeError(
      `baseUrl ${JSON.stringify(options.baseUrl)} is not an absolute URL; expected the partner API address, e.g. https://partner-api.example.`,
      { cause },
    );
  }
  return createClient<paths>({
    baseUrl: base.href.replace(/\/+$/, ''),
    ...(options.fetch ? { fetch: options.fetch } : {}),
    ...(options.headers ? { headers: options.headers } : {}),
  });
}
