import type { DecodedJwt } from '../common/jwt.js';
import type { Secret } from '../common/redact.js';
import type { Exchange } from './http/exchange.js';

/** The service under test. */
export interface Target {
  readonly authUrl: string;
  readonly tokenUrl: string;
  readonly baseUrl: string;
  readonly audience: string;
  readonly clientId: Secret;
  readonly clientSecret: Secret;
}

/** The settings checks read. */
export interface CheckSettings {
  readonly allowWrites: boolean;
  readonly expectScopes: readonly string[] | undefined;
  readonly maxExpiryWaitSeconds: number;
  /** A real partner id that is not the tested client's, for the isolation check; undefined: none known. */
  readonly foreignPartnerId: string | undefined;
  /** A second partner's client credentials, when given: the isolation check learns its id and proves its path. */
  readonly otherClient: { clientId: Secret; clientSecret: Secret } | undefined;
  /** Where the key set is, when known (the embedded mock); else discovered. */
  readonly jwksUrl: string | undefined;
  /** A host the target can reach the suite's own issuer at (--listen); loopback targets need none. */
  readonly listen?: string | undefined;
  /** An audience the token endpoint issues for this client that is not the API (--other-audience). */
  readonly otherAudience?: string | undefined;
}

/** A token request and what came back. */
export interface TokenOutcome {
  readonly exchange: Exchange;
  /** The scopes asked for; undefined when no scope parameter was sent. */
  readonly requested: readonly string[] | undefined;
  readonly audience: string;
  /** The access token when the answer was a 200 carrying one. */
  readonly accessToken: string | undefined;
  readonly body: Record<string, unknown> | undefined;
  readonly jwt: DecodedJwt | undefined;
  /** The granted scopes: the response `scope`, or the requested ones when it is absent (RFC 6749 §5.1). */
  readonly granted: string[] | undefined;
}

export interface ApiCall {
  /** The whole Authorization header; null sends none. Default: `Bearer <token>`. */
  authorization?: string | null;
  token?: string;
  partnerId?: string;
  query?: Record<string, string>;
  json?: unknown;
  form?: ReadonlyArray<readonly [string, string]>;
  headers?: Record<string, string>;
}
