/**
 * One exchange the production side served a partner, as evidence reports it: what a gateway logs
 * anyway, with the token replaced by a keyed fingerprint. Never a token, a body, a secret or personal
 * data. The OpenTelemetry attribute each field comes from is named beside it (`POST /evidence`).
 */
export interface Exchange {
  /** When it was served, ms since the epoch, by the reporter's clock (the log record's time). */
  at: number;
  /** `partner.id`: the partner (client id) the token belongs to, or that asked for it. */
  partnerId: string;
  /** `token` for the token endpoint (the record has `oauth.grant_type`), `api` for a call to the API. */
  kind: 'token' | 'api';
  /** `http.request.method`. */
  method: string;
  /** `url.path`: the path as served, without the query. */
  path: string;
  /** `http.response.status_code`. */
  status: number;
  /**
   * `token.fingerprint`: a keyed hash of the token — the one issued (`token`, 200) or presented
   * (`api`); absent when none was. Equal tokens have equal fingerprints under one reporter's key.
   */
  fingerprint?: string;
  /** `oauth.scope.granted` (space-separated): the scopes granted by a token issue. */
  scopesGranted?: string[];
  /** From `oauth.token.expires_in` (seconds) and `at`: when the issued token expires, ms since the epoch. */
  expiresAt?: number;
  /** `http.response.header.retry-after`, in seconds: the wait the answer asked for. */
  retryAfterSeconds?: number;
  /** `error.type`: the OAuth error of the answer (`invalid_token`, `insufficient_scope`, `invalid_client`, …). */
  error?: string;
  /** The evidence reporter that sent it. */
  reporterId: string;
}
