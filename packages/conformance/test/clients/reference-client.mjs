// A partner journey written with nothing but fetch: correct by default, wrong in exactly one way with
// BUG=<name>. The client-mode tests run it under the stage; each bug must turn exactly its check red.
//   token-per-call · cached-past-exp · token-in-query · secret-to-api · ignore-retry-after ·
//   replay-create · retry-loop-401 · stampede · other-partner · wrong-scheme · no-audience ·
//   broad-scope · ignore-grant · create-as-text · serialised-herd · reactive-renewal · retry-other-op ·
//   granted-scope-cache · burst-after-429 · keep-revoked · ignore-scope · no-calls
// (keep-revoked asks for all four scopes and never drops a token the API refused 401 invalid_token, sending
// it until it expires; ignore-scope asks for all four scopes and never reads the token answer's scope: it
// calls the creates with the narrowed read:loans token.)
// Correct variants a library may also be: RENEW_AHEAD_SECONDS=300 renews that far ahead of expiry
// (each worker fetches its own token under a lock, checking the cache again once it holds it),
// WORKERS=3 makes three calls at a time, ASK_ALL=1 asks every token request for all four scopes.
const bug = process.env.BUG ?? '';
const seconds = Number(process.env.JOURNEY_SECONDS ?? 5);
const renewAheadMs = Number(process.env.RENEW_AHEAD_SECONDS ?? 0.6) * 1000;
const locked = process.env.RENEW_AHEAD_SECONDS !== undefined;
const workers = Math.max(2, Number(process.env.WORKERS ?? 2));
// granted-scope-cache asks for all four scopes too, as clients written against the whole API do.
// keep-revoked does too: one token for every call, so the revoked one is the one it lists loans with.
const askAll =
  process.env.ASK_ALL === '1' ||
  bug === 'granted-scope-cache' ||
  bug === 'ignore-scope' ||
  bug === 'keep-revoked';
const allScopes = 'read:loans create:loan_draft create:journal_update create:repayment';
const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const tokenUrl = env('PARTNER_TOKEN_URL');
const baseUrl = env('PARTNER_BASE_URL');
const audience = env('PARTNER_AUDIENCE');
const clientId = env('PARTNER_CLIENT_ID');
const clientSecret = env('PARTNER_CLIENT_SECRET');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

if (bug === 'no-calls') process.exit(0);

const cache = new Map(); // scope → { token, partnerId, expiresAt }
const inFlight = new Map(); // scope → Promise
// serialised-herd: callers queue behind one lock, and each fetches a token of its own once it has it.
let lock = Promise.resolve();
// After a 429 or 503 with Retry-After, no request to the API until then (any operation).
let notBefore = 0;

async function requestToken(scope) {
  const form = {
    grant_type: 'client_credentials',
    client_id: clientId,
    client_secret: clientSecret,
    // broad-scope asks for every operation's scope, whatever it calls.
    scope: bug === 'broad-scope' ? 'read:loans create:loan_draft' : askAll ? allScopes : scope,
    audience,
  };
  if (bug === 'no-audience') delete form.audience;
  const response = await fetch(tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams(form),
  });
  if (!response.ok) throw new Error(`token endpoint answered ${response.status}`);
  const body = await response.json();
  return {
    token: body.access_token,
    partnerId: body.partnerId,
    scope: body.scope,
    expiresAt: Date.now() + body.expires_in * 1000,
  };
}

// The cache key of a call's token: the scopes it asks for (all four under ASK_ALL).
const keyOf = (scope) => (askAll ? allScopes : scope);
const fresh = (held) => held !== undefined && Date.now() < held.expiresAt - renewAheadMs;

async function tokenFor(scope) {
  if (bug === 'token-per-call') return requestToken(scope);
  if (bug === 'granted-scope-cache') {
    // Files each token under the scopes granted, looks it up under the scopes asked: never finds it.
    const held = cache.get(keyOf(scope));
    if (fresh(held)) return held;
    if (inFlight.has(keyOf(scope))) return inFlight.get(keyOf(scope));
    const pending = requestToken(scope).finally(() => inFlight.delete(keyOf(scope)));
    inFlight.set(keyOf(scope), pending);
    const got = await pending;
    cache.set(got.scope, got);
    return got;
  }
  if (locked) {
    // Renews far ahead, one worker at a time; once it holds the lock it looks at the cache again.
    const turn = lock.then(async () => {
      const held = cache.get(keyOf(scope));
      if (fresh(held)) return held;
      const got = await requestToken(scope);
      cache.set(keyOf(scope), got);
      return got;
    });
    lock = turn.catch(() => {});
    return turn;
  }
  const held = cache.get(keyOf(scope));
  // Renew 600 ms ahead; cached-past-exp never renews, reactive-renewal only when the API refuses it.
  const keep = bug === 'cached-past-exp' || bug === 'reactive-renewal';
  if (held && (keep || fresh(held))) return held;
  if (bug === 'serialised-herd') {
    const turn = lock.then(async () => {
      const got = await requestToken(scope);
      cache.set(keyOf(scope), got);
      return got;
    });
    lock = turn.catch(() => {});
    // Callers go on only once the queue has drained (every queued caller has fetched its own), so no
    // call uses the first token before the last caller asked again: the herd shows whatever the load.
    return turn.then(async (got) => {
      for (let seen; seen !== lock; ) {
        seen = lock;
        await seen;
      }
      return got;
    });
  }
  const key = keyOf(scope);
  if (bug !== 'stampede' && inFlight.has(key)) return inFlight.get(key);
  const pending = requestToken(scope).finally(() => inFlight.delete(key));
  inFlight.set(key, pending);
  const got = await pending;
  cache.set(key, got);
  return got;
}

// Every client but these two waits out a Retry-After before its next call.
const honoursRetryAfter = bug !== 'ignore-retry-after' && bug !== 'retry-other-op';

async function call(method, path, scope, body) {
  let retriedAuth = false;
  let attempts = 0;
  for (;;) {
    attempts += 1;
    let held;
    for (;;) {
      if (honoursRetryAfter) await sleep(Math.max(0, notBefore - Date.now()));
      held = await tokenFor(scope);
      // A 429 may have come while it waited for its token: wait again, then take the token afresh (the
      // one in hand may expire during the wait; a short token lives less than a Retry-After).
      if (!honoursRetryAfter || Date.now() >= notBefore) break;
    }
    const { token, partnerId } = held;
    const partner = bug === 'other-partner' ? 'partner-someone-else' : partnerId;
    let url = `${baseUrl}/v3/partner/${partner}/${path}`;
    if (bug === 'token-in-query') url += `${url.includes('?') ? '&' : '?'}access_token=${token}`;
    const headers = {
      authorization: `${bug === 'wrong-scheme' ? 'Token' : 'Bearer'} ${token}`,
      accept: 'application/json',
    };
    if (bug === 'secret-to-api') headers['x-client-secret'] = clientSecret;
    if (body) headers['content-type'] = bug === 'create-as-text' ? 'text/plain' : 'application/json';
    const sent =
      body && (bug === 'create-as-text' ? new URLSearchParams(body).toString() : JSON.stringify(body));
    const response = await fetch(url, { method, headers, ...(body && { body: sent }) });
    await response.arrayBuffer();
    if (response.status === 401 && /invalid_token/.test(response.headers.get('www-authenticate') ?? '')) {
      if (bug === 'retry-loop-401' && attempts < 6) continue;
      // keep-revoked gives up on the call but keeps the refused token, sending it until it expires.
      if (bug === 'keep-revoked') return response.status;
      if (bug === 'cached-past-exp') return response.status;
      if (retriedAuth) return response.status;
      retriedAuth = true;
      // Drop the cached token (under a lock, only if it is still the refused one: another worker may have renewed).
      if (!locked || cache.get(keyOf(scope))?.token === token) cache.delete(keyOf(scope));
      continue;
    }
    if ((response.status === 429 || response.status === 503) && attempts < 4) {
      const wait = bug === 'ignore-retry-after' ? 0 : Number(response.headers.get('retry-after') ?? 1) * 1000;
      notBefore = Math.max(notBefore, Date.now() + wait);
      // retry-other-op waits before calling this operation again, but calls another one meanwhile.
      if (bug === 'retry-other-op' && path !== 'loan_draft')
        await call('POST', 'loan_draft', 'create:loan_draft', { note: 'meanwhile' });
      // burst-after-429 waits too, but first sends three more calls one after another, at once.
      if (bug === 'burst-after-429' && response.status === 429)
        for (let burst = 0; burst < 3; burst++) {
          const more = await fetch(`${baseUrl}/v3/partner/${partnerId}/loans?limit=1&burst=${burst}`, {
            headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
          });
          await more.arrayBuffer();
        }
      if (method === 'POST' && bug !== 'replay-create') return response.status;
      await sleep(wait);
      continue;
    }
    return response.status;
  }
}

const statuses = [];
// Two calls at once at the start: the single flight of token requests shows (or the stampede).
const together = (limit) =>
  Array.from({ length: workers }, (_, index) =>
    call('GET', `loans?limit=${limit}&offset=${index * limit}`, 'read:loans'),
  );
statuses.push(...(await Promise.all(together(5))));
// Authorised for all four scopes (a certification run): every create is made until it succeeds once — a
// create answered 503 is not re-sent, but made again later as new business (another body); a create
// whose token was refused or narrowed is not called, and is tried again in a later round.
const authorised = (process.env.PARTNER_SCOPES ?? '').split(' ');
const creates =
  authorised.length === 4
    ? [
        ['loan_draft', 'create:loan_draft'],
        ['journals', 'create:journal_update'],
        ['repayments', 'create:repayment'],
      ]
    : [];
// broad-scope never creates: its tokens carry create:loan_draft for nothing.
if (bug === 'broad-scope') creates.length = 0;
else if (authorised.length !== 4)
  statuses.push(await call('POST', 'loan_draft', 'create:loan_draft', { amount: 2500, currency: 'EUR' }));
const grants = (held, scope) => ` ${held.scope ?? (askAll ? allScopes : scope)} `.includes(` ${scope} `);
let round = 0;
async function createsRound() {
  round += 1;
  for (const [path, scope] of [...creates]) {
    let held = await tokenFor(scope).catch(() => undefined);
    // The token answer's scope is the grant (RFC 6749 §5.1: absent, it is what was asked): a token lacking
    // the scope is never used for the operation; a new token asking for it is (once a round).
    if (held && !grants(held, scope) && bug !== 'ignore-scope') {
      if (cache.get(keyOf(scope)) === held) cache.delete(keyOf(scope));
      held = await tokenFor(scope).catch(() => undefined);
    }
    if (!held || (!grants(held, scope) && bug !== 'ignore-scope')) {
      if (!held || cache.get(keyOf(scope)) === held) cache.delete(keyOf(scope));
      continue;
    }
    const status = await call('POST', path, scope, { amount: 2500, currency: 'EUR', round });
    statuses.push(status);
    if (status >= 200 && status < 300) creates.splice(creates.indexOf(creates.find(([p]) => p === path)), 1);
  }
}
if (creates.length > 0) await createsRound();
// An operation outside the grant: the token endpoint refuses the scope (or narrows it); do not call it.
const repayment =
  authorised.length === 4 ? undefined : await requestToken('create:repayment').catch(() => undefined);
if (repayment && /create:repayment/.test(repayment.scope ?? ''))
  statuses.push(await call('POST', 'repayments', 'create:repayment', { amount: 1 }));
else if (bug === 'ignore-grant') {
  // Calls the operation it was not granted, again and again, with the token it has: three more times
  // once it was refused 403, whatever fault scenario (a revocation, a 429, a 503) took an attempt
  // before that (8 attempts at most).
  let refusedAt = -1;
  for (let attempt = 0; attempt < 8 && (refusedAt < 0 || attempt - refusedAt <= 3); attempt++) {
    const status = await call('POST', 'repayments', 'read:loans', { amount: 1, attempt });
    statuses.push(status);
    if (status === 403 && refusedAt < 0) refusedAt = attempt;
  }
}
const end = Date.now() + seconds * 1000;
// serialised-herd drops its token once two thirds in (past the stage's short phase, however late the
// journey started), as a pool restarting its workers would: its herd then meets a long-lived token.
let forgetAt = Date.now() + (seconds * 2000) / 3;
// Two calls at a time (WORKERS): renewals happen under concurrency (single flight, or the herd).
while (Date.now() < end) {
  if (bug === 'serialised-herd' && Date.now() >= forgetAt) {
    cache.clear();
    forgetAt = Number.POSITIVE_INFINITY;
  }
  statuses.push(...(await Promise.all(together(10))));
  if (creates.length > 0) await createsRound();
  await sleep(250);
}
console.log(
  `reference client${bug ? ` (bug: ${bug})` : ''}: ${statuses.length} calls, statuses ${[...new Set(statuses)].join(' ')}`,
);
