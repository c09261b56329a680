// A real, counting token endpoint on 127.0.0.1 (port 0) for tests and benchmarks. Its access tokens
// are JWTs whose claims the auth package's provider checks (aud, exp, scope, partnerId, iss,
// client_id); the signature is random bytes, as the provider only decodes unless `verify` is set.
// Like real servers (and the project's mock), exp counts whole seconds from the start of the current
// second: a token lives between ttl - 1 and ttl seconds, never the extra second a friendlier bench
// server would give.
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

export const CLIENT_ID = 'fleet-client-7d2e';
export const CLIENT_SECRET = 'fleet-secret-b81f3c9a5e7d4f60';
export const PARTNER_ID = 'partner-fleet';

const b64 = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** @param {{ ttlSeconds?: number, delayMs?: number }} [options] */
export async function startTokenServer(options = {}) {
  let ttlSeconds = options.ttlSeconds ?? 3600;
  let delayMs = options.delayMs ?? 0;
  let failing = false;
  /** @type {number | undefined} */
  let retryAfterSeconds;
  let count = 0;
  const issued = [];
  /** Epoch ms of every token request. */
  const arrivals = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      if (req.method !== 'POST' || req.url !== '/oauth/token') {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found"}');
        return;
      }
      count++;
      arrivals.push(Date.now());
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
      if (retryAfterSeconds !== undefined) {
        res
          .writeHead(429, { 'content-type': 'application/json', 'retry-after': String(retryAfterSeconds) })
          .end('{"error":"slow_down"}');
        return;
      }
      if (failing) {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"invalid_request"}');
        return;
      }
      if (form.get('client_id') !== CLIENT_ID || form.get('client_secret') !== CLIENT_SECRET) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid_client"}');
        return;
      }
      const now = Date.now();
      const iat = Math.floor(now / 1000);
      const jti = randomUUID();
      const scope = (form.get('scope') ?? '').split(' ').filter(Boolean);
      const granted = scope.length > 0 ? scope : ['read:loans'];
      const jwt = sign({
        iss: api.issuer,
        aud: [form.get('audience') ?? api.audience],
        sub: CLIENT_ID,
        client_id: CLIENT_ID,
        scope: granted,
        partnerId: PARTNER_ID,
        jti,
        iat,
        exp: iat + ttlSeconds,
      });
      issued.push(jwt);
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(
        JSON.stringify({
          access_token: jwt,
          token_type: 'bearer',
          expires_in: ttlSeconds,
          scope: granted.join(' '),
          partnerId: PARTNER_ID,
          jti,
        }),
      );
    });
  });
  const sign = (claims) =>
    `${b64({ alg: 'ES256', typ: 'at+jwt' })}.${b64(claims)}.${randomBytes(64).toString('base64url')}`;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${server.address().port}`;
  const api = {
    origin,
    tokenUrl: `${origin}/oauth/token`,
    issuer: `${origin}/`,
    audience: 'https://api.fleet.test',
    issued,
    tokenRequests: () => count,
    setTtlSeconds: (s) => {
      ttlSeconds = s;
    },
    setDelayMs: (ms) => {
      delayMs = ms;
    },
    setFailing: (value) => {
      failing = value;
    },
    /** Answers every token request 429 with this Retry-After (seconds) until set back to undefined. */
    setRetryAfter: (seconds) => {
      retryAfterSeconds = seconds;
    },
    /** Token requests received since `since` (epoch ms). */
    requestsSince: (since) => arrivals.filter((at) => at >= since).length,
    /**
     * A token as this server would issue it to someone else (another client, partner or audience):
     * what an attacker or a misconfigured process could write to the shared store.
     */
    foreignToken: ({ clientId = CLIENT_ID, partnerId = PARTNER_ID, audience = api.audience } = {}) => {
      const iat = Math.floor(Date.now() / 1000);
      const jti = randomUUID();
      const accessToken = sign({
        iss: api.issuer,
        aud: [audience],
        sub: clientId,
        client_id: clientId,
        scope: ['read:loans'],
        partnerId,
        jti,
        iat,
        exp: iat + 3600,
      });
      return {
        accessToken,
        tokenType: 'Bearer',
        expiresAt: (iat + 3600) * 1000,
        obtainedAt: Date.now(),
        grantedScopes: ['read:loans'],
        partnerId,
        issuer: api.issuer,
        jti,
      };
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return api;
}
