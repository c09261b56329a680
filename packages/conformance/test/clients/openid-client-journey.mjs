// A partner journey built on openid-client 6 (panva's certified OpenID/OAuth client, a library this project
// did not write), at its defaults: a Configuration for the token endpoint (no discovery document is
// served), client authentication as openid-client does it by default when given a secret
// (client_secret_post), clientCredentialsGrant for tokens and fetchProtectedResource for the API (which
// throws WWWAuthenticateChallengeError on a 401 or 403 that carries a challenge). openid-client keeps no
// tokens itself; as its documentation suggests for the client-credentials grant, the journey keeps a small
// cache of the last token answer, reused while the answer's own expiresIn() helper says it has life left
// (renewed once under a second remains). It asks for the scopes its client is authorised for
// (PARTNER_SCOPES, as the partner console says), reads the granted scope of each token answer (absent, it
// is what was asked: RFC 6749 §5.1) and, before an operation its token lacks, asks for a new token: never
// the operation called with a token lacking its scope. A 401 invalid_token drops the cached token (never
// sent again) and the call is made once more with a new one; after a 429 or 503 no call of any operation
// before its Retry-After; a create answered 503 is never re-sent (a later round makes a new one). It lists
// loans and makes each authorised create until it succeeded once. Run under the certification stage.
// The stage serves plain HTTP on loopback: openid-client refuses http: unless allowed, so the journey
// allows it for an http: token URL only (production is https:).
// FAULT=keep-revoked keeps a token answered 401 invalid_token (gives up the call, sends it again until it
// expires); FAULT=ignore-scope never reads the token answer's scope (creates with the narrowed token).
import * as client from 'openid-client';

const fault = process.env.FAULT ?? '';
const seconds = Number(process.env.JOURNEY_SECONDS ?? 5);
const tokenUrl = new URL(process.env.PARTNER_TOKEN_URL);
const baseUrl = process.env.PARTNER_BASE_URL;
const authorised = process.env.PARTNER_SCOPES?.trim() || 'read:loans';
const config = new client.Configuration(
  { issuer: tokenUrl.origin, token_endpoint: tokenUrl.href },
  process.env.PARTNER_CLIENT_ID,
  process.env.PARTNER_CLIENT_SECRET,
);
if (tokenUrl.protocol === 'http:') client.allowInsecureRequests(config);

/** The small cache: the scopes asked → the last token answer for them. */
const cache = new Map();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const granted = (tokens, scope) => ` ${tokens.scope ?? authorised} `.includes(` ${scope} `);
let notBefore = 0;

/** The cached token, or a new one when it has no life left (or, scope read, lacks `scope`). */
async function tokenFor(scope) {
  const held = cache.get(authorised);
  if (held && held.expiresIn() > 0 && (fault === 'ignore-scope' || granted(held, scope))) return held;
  const tokens = await client.clientCredentialsGrant(config, {
    scope: authorised,
    audience: process.env.PARTNER_AUDIENCE,
  });
  cache.set(authorised, tokens);
  return tokens;
}

/** One API call needing `scope`: its status, or 0 when the scope is not granted now (not called). */
async function call(method, path, scope, body) {
  for (let attempt = 1; attempt <= 3; attempt++) {
    await sleep(Math.max(0, notBefore - Date.now()));
    const tokens = await tokenFor(scope);
    if (fault !== 'ignore-scope' && !granted(tokens, scope)) return 0;
    let response;
    try {
      response = await client.fetchProtectedResource(
        config,
        tokens.access_token,
        new URL(`${baseUrl}/v3/partner/${tokens.partnerId}/${path}`),
        method,
        body && JSON.stringify(body),
        new Headers({ accept: 'application/json', ...(body && { 'content-type': 'application/json' }) }),
      );
    } catch (error) {
      if (!(error instanceof client.WWWAuthenticateChallengeError)) throw error;
      response = error.response;
      const invalid = error.cause.some((challenge) => challenge.parameters.error === 'invalid_token');
      if (response.status === 401 && invalid && fault === 'keep-revoked') return response.status;
      if (response.status === 401 && invalid) {
        // Revoked (or expired early): this token is never sent again; one new token, one retry.
        if (cache.get(authorised) === tokens) cache.delete(authorised);
        if (attempt === 1) continue;
      }
      return response.status;
    }
    await response.arrayBuffer();
    if (response.status === 429 || response.status === 503) {
      notBefore = Math.max(notBefore, Date.now() + Number(response.headers.get('retry-after') ?? 1) * 1000);
      if (method === 'POST') return response.status; // a create is never sent twice
      continue;
    }
    return response.status;
  }
  return 0;
}

const pending = [
  ['loan_draft', 'create:loan_draft'],
  ['journals', 'create:journal_update'],
  ['repayments', 'create:repayment'],
].filter(([, scope]) => authorised.split(' ').includes(scope));
const end = Date.now() + seconds * 1000;
let calls = 0;
for (let round = 1; Date.now() < end; round++) {
  await call('GET', 'loans?limit=10', 'read:loans');
  calls += 1;
  for (const item of [...pending]) {
    const status = await call('POST', item[0], item[1], { amount: 1000 + round, currency: 'EUR' });
    calls += 1;
    if (status >= 200 && status < 300) pending.splice(pending.indexOf(item), 1);
  }
  await sleep(300);
}
console.log(
  `openid-client journey${fault ? ` (fault: ${fault})` : ''}: ${calls} calls, ${pending.length} creates never succeeded`,
);
