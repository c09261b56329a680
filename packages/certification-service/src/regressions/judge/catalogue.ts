/** The plan's client checks judged on production traffic (ids of the conformance suite's catalogue). */
export const judgedInProduction = [
  'client-token-reuse',
  'client-single-flight',
  'client-retry-after',
  'client-revocation-recovery',
  'client-granted-scope-respected',
  'client-no-expired-token',
  'client-bearer-header',
  'client-own-partner',
] as const;

export type ProductionCheckId = (typeof judgedInProduction)[number];

/**
 * The plan's client checks the production evidence cannot decide, and why: an exchange carries the
 * method, the path without its query, the status, a keyed token fingerprint, the scopes granted, the
 * expiry, Retry-After and the OAuth error — never a body, a header, a query or what the client asked for.
 */
export const notJudgedInProduction: Readonly<Record<string, string>> = Object.freeze({
  'client-token-not-in-url':
    'the path is reported without its query, and a token in the query is refused before it is fingerprinted',
  'client-secret-confined':
    'request bodies and headers are never reported: where the secret travelled is not in evidence',
  'client-create-not-replayed':
    'a replayed create is told apart by its idempotency key and body, neither of which is reported',
  'client-audience': 'the audience a token request asked for is not reported, only the scopes granted',
  'client-least-scope': 'the scopes a token request asked for are not reported, only the scopes granted',
  'client-request-shape': 'request bodies and content types are not reported',
});
