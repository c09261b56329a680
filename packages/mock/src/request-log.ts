import { shorten } from './mock-client.js';

/** One request as the mock saw it, with secrets and tokens redacted. */
export interface LoggedRequest {
  /** Epoch ms (from the mock's clock) when the request arrived. */
  readonly at: number;
  readonly server: 'auth' | 'api';
  readonly method: string;
  /** Path and query; values of secret-bearing parameters are replaced by `[redacted]`. */
  readonly target: string;
  readonly status: number;
  /** The Authorization header shortened: scheme plus the last 6 characters of the credentials. */
  readonly authorization?: string;
  /** The OAuth or RFC 6750 error code of the answer, when there was one. */
  readonly error?: string;
  /** The partner the request was authenticated as, when it was. */
  readonly partnerId?: string;
}

const secretParams = new Set(['access_token', 'client_secret', 'client_id', 'token', 'code', 'assertion']);

/** Replaces the values of secret-bearing query parameters. Never throws. */
export function redactTarget(target: string): string {
  const index = target.indexOf('?');
  if (index === -1) return target;
  const parts = target
    .slice(index + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const rawName = eq === -1 ? pair : pair.slice(0, eq);
      let name = rawName;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      } catch {
        // keep the raw name
      }
      return secretParams.has(name.toLowerCase()) ? `${rawName}=[redacted]` : pair;
    });
  return `${target.slice(0, index)}?${parts.join('&')}`;
}

/** Shortens an Authorization header: `Bearer …abc123`. Basic credentials are never shown. */
export function redactAuthorization(header: string): string {
  const trimmed = header.trim();
  const space = trimmed.indexOf(' ');
  if (space === -1) return trimmed.length > 10 ? shorten(trimmed) : '[redacted]';
  const scheme = trimmed.slice(0, space);
  if (scheme.toLowerCase() === 'basic') return 'Basic [redacted]';
  return `${scheme} ${shorten(trimmed.slice(space + 1).trim())}`;
}

/** A bounded in-memory log (the newest `capacity` requests). */
export class RequestLog {
  readonly #entries: LoggedRequest[] = [];
  readonly #capacity: number;

  constructor(capacity = 1000) {
    this.#capacity = capacity;
  }

  add(entry: LoggedRequest): void {
    this.#entries.push(entry);
    if (this.#entries.length > this.#capacity) this.#entries.shift();
  }

  entries(): readonly LoggedRequest[] {
    return [...this.#entries];
  }
}
