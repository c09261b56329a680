// A real, counting token endpoint on 127.0.0.1 (port 0) for tests and benchmarks. Its access tokens
// are JWTs whose claims the auth package's provider checks (aud, exp, scope, partnerId, iss); the
// signature is random bytes, as the provider only decodes unless `verify` is set.
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
  let count = 0;
  const issued = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      if (req.method !== 'POST' || req.url !== '/oauth/token') {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found"}');
        return;
      }
      count++;
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
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
      const claims = {
        iss: api.issuer,
        aud: [form.get('audience') ?? api.audience],
        sub: `${CLIENT_ID}@clients`,
        scope: granted,
        partnerId: PARTNER_ID,
        jti,
        iat,
        exp: iat + ttlSeconds + 1,
      };
      const jwt = `${b64({ alg: 'ES256', typ: 'at+jwt' })}.${b64(claims)}.${randomBytes(64).toString('base64url')}`;
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
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return api;
}
