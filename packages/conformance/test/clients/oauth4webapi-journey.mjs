// A partner journey built on oauth4webapi 3 (panva's low-level OAuth 2 / OpenID Connect functions, a
// library this project did not write), at its defaults: the authorization server described by hand (its
// token endpoint; no discovery document is served), client_secret_post as the library's client-credentials
// example and openid-client (built on it) use, clientCredentialsGrantRequest and
// processClientCredentialsResponse for tokens (the answer validated: token_type, expires_in, scope), and
// protectedResourceRequest for the API (which throws WWWAuthenticateChallengeError on a 401 or 403 that
// carries a challenge). oauth4webapi keeps no state, so the journey keeps what a careful partner keeps: one
// token, its expiry from expires_in (renewed once under a second of it remains), and one token request at a
// time (callers that find one in flight wait for it). It asks for the scopes its client is authorised for
// (PARTNER_SCOPES, as the partner console says), reads the granted scope of each token answer (absent, it is
// what was asked: RFC 6749 §5.1) and, before an operation its token lacks, asks for a new token: never the
// operation called with a token lacking its scope. A 401 invalid_token drops the token (never sent again)
// and the call is made once more with a new one; after a 429 or 503 no call of any operation before its
// Retry-After; a create answered 503 is never re-sent (a later round makes a new one). It lists loans (two
// at once first: the single token request shows) and makes each authorised create until it succeeded once.
// Run under the certification stage. The stage serves plain HTTP on loopback: oauth4webapi refuses http:
// unless allowed, so the journey allows it for an http: token URL only (production is https:).
// FAULT=keep-revoked keeps a token answered 401 invalid_token (gives up the call, sends it again until it
// expires); FAULT=ignore-scope never reads the token answer's scope (creates with the narrowed token).
import * as oauth from 'oauth4webapi';

const fault = process.env.FAULT ?? '';
const seconds = Number(process.env.JOURNEY_SECONDS ?? 5);
const tokenUrl = new URL(process.env.PARTNER_TOKEN_URL);
const baseUrl = process.env.PARTNER_BASE_URL;
const authorised = process.env.PARTNER_SCOPES?.trim() || 'read:loans';
const as = { issuer: tokenUrl.origin, token_endpoint: tokenUrl.href };
const client = { client_id: process.env.PARTNER_CLIENT_ID };
const clientAuth = oauth.ClientSecretPost(process.env.PARTNER_CLIENT_SECRET);
const http = tokenUrl.protocol === 'http:' ? { [oauth.allowInsecureRequests]: true } : {};

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const granted = (held, scope) => ` ${held.scope ?? authorised} `.includes(` ${scope} `);
/** The token held: { token, scope, partnerId, expiresAt }; the token request in flight, if any. */
let held;
let inFlight;
let notBefore = 0;

async function requestToken() {
  const response = await oauth.clientCredentialsGrantRequest(
    as,
    client,
    clientAuth,
    new URLSearchParams({ scope: authorised, audience: process.env.PARTNER_AUDIENCE }),
    http,
  );
  const result = await oauth.processClientCredentialsResponse(as, client, response);
  return {
    token: result.access_token,
    scope: result.scope,
    partnerId: result.partnerId,
    expiresAt: Date.now() + result.expires_in * 1000,
  };
}

/** The token held, or a new one (one request at a time) when under a second is left or, scope read, it lacks `scope`. */
async function tokenFor(scope) {
  const usable = held && Date.now() < held.expiresAt - 1000;
  if (usable && (fault === 'ignore-scope' || granted(held, scope))) return held;
  inFlight ??= requestToken()
    .then((got) => {
      held = got;
      return got;
    })
    .finally(() => {
      inFlight = undefined;
    });
  return inFlight;
}

/** One API call needing `scope`: its status, or 0 when the scope is not granted now (not called). */
async function call(method, path, scope, body) {
  for (let attempt = 1; attempt <= 3; attempt++) {
    await sleep(Math.max(0, notBefore - Date.now()));
    const current = await tokenFor(scope);
    if (fault !== 'ignore-scope' && !granted(current, scope)) return 0;
    let response;
    try {
      response = await oauth.protectedResourceRequest(
        current.token,
        method,
        new URL(`${baseUrl}/v3/partner/${current.partnerId}/${path}`),
        new Headers({ accept: 'application/json', ...(body && { 'content-type': 'application/json' }) }),
        body ? JSON.stringify(body) : null,
        http,
      );
    } catch (error) {
      if (!(error instanceof oauth.WWWAuthenticateChallengeError)) throw error;
      response = error.response;
      const invalid = error.cause.some((challenge) => challenge.parameters.error === 'invalid_token');
      if (response.status === 401 && invalid && fault === 'keep-revoked') return response.status;
      if (response.status === 401 && invalid) {
        // Revoked (or expired early): this token is never sent again; one new token, one retry.
        if (held === current) held = undefined;
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

let calls = 0;
await Promise.all([
  call('GET', 'loans?limit=5', 'read:loans'),
  call('GET', 'loans?limit=5&offset=5', 'read:loans'),
]);
calls += 2;
const pending = [
  ['loan_draft', 'create:loan_draft'],
  ['journals', 'create:journal_update'],
  ['repayments', 'create:repayment'],
].filter(([, scope]) => authorised.split(' ').includes(scope));
const end = Date.now() + seconds * 1000;
for (let round = 1; Date.now() < end; round++) {
  for (const item of [...pending]) {
    const status = await call('POST', item[0], item[1], { amount: 1000 + round, currency: 'EUR' });
    calls += 1;
    if (status >= 200 && status < 300) pending.splice(pending.indexOf(item), 1);
  }
  await call('GET', 'loans?limit=10', 'read:loans');
  calls += 1;
  await sleep(300);
}
console.log(
  `oauth4webapi journey${fault ? ` (fault: ${fault})` : ''}: ${calls} calls, ${pending.length} creates never succeeded`,
);
