/** One request of a check. Exactly one of `form`, `json` and `body` may carry a body. */
export interface ProbeRequest {
  method: string;
  url: string;
  headers?: Record<string, string>;
  /** application/x-www-form-urlencoded fields, in order (RFC 6749 §4.4.2). */
  form?: ReadonlyArray<readonly [string, string]>;
  /** A JSON body. */
  json?: unknown;
  /** A raw body, sent as given with the headers given. */
  body?: string;
}

/** A request and the answer to it, as a check sees it. */
export interface Exchange {
  readonly request: ProbeRequest;
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** The parsed body when it is JSON, else undefined. */
  readonly json: unknown;
  /** Set when the body was longer than the read cap: how many bytes were read before the suite stopped. */
  readonly truncatedAt?: number;
  readonly durationMs: number;
}
