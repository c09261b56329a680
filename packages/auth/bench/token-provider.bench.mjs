// Benchmarks for @partner-lending/auth (run with `pnpm bench`; they print figures, they assert nothing
// about speed). Uses the built package, so `turbo run bench` builds first.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import { generateKeyPair, SignJWT } from 'jose';
import { createTokenProvider } from '../dist/index.js';

const AUDIENCE = 'https://partner-api.example';
const { privateKey } = await generateKeyPair('ES256');
let tokenRequests = 0;

const server = createServer((req, res) => {
  let body = '';
  req.on('data', (chunk) => {
    body += chunk;
  });
  req.on('end', async () => {
    tokenRequests++;
    const form = new URLSearchParams(body);
    const scope = form.get('scope') ?? 'read:loans';
    const iat = Math.floor(Date.now() / 1000);
    const jti = randomUUID();
    const jwt = await new SignJWT({
      aud: [AUDIENCE],
      scope: scope.split(' '),
      partnerId: 'p-1',
      iss: 'bench/',
      jti,
    })
      .setProtectedHeader({ alg: 'ES256', kid: 'k' })
      .setIssuedAt(iat)
      .setExpirationTime(iat + 3600)
      .sign(privateKey);
    // A little latency, as a real token endpoint has: concurrent callers pile up meanwhile.
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(
        JSON.stringify({
          access_token: jwt,
          token_type: 'bearer',
          expires_in: 3599,
          scope,
          iss: 'bench/',
          partnerId: 'p-1',
          jti,
        }),
      );
    }, 20);
  });
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const tokenUrl = `http://127.0.0.1:${server.address().port}/oauth/token`;
const provider = () =>
  createTokenProvider({
    tokenUrl,
    clientId: 'bench-client',
    clientSecret: 'bench-secret',
    audience: AUDIENCE,
  });

async function opsPerSecond(fn, durationMs = 1500) {
  // warm-up
  for (let i = 0; i < 10_000; i++) await fn();
  let ops = 0;
  const start = performance.now();
  while (performance.now() - start < durationMs) {
    for (let i = 0; i < 1000; i++) await fn();
    ops += 1000;
  }
  return ops / ((performance.now() - start) / 1000);
}

// 1. Cache-hit getToken per second, against a baseline measured in the same run: the least a cache
//    can do (a Map lookup handed back through a promise).
const warm = provider();
await warm.getToken({ scopes: ['read:loans'] });
const map = new Map([['key', { accessToken: 'x' }]]);
const baseline = await opsPerSecond(() => Promise.resolve(map.get('key')));
const hitDefault = await opsPerSecond(() => warm.getToken());
const hitScoped = await opsPerSecond(() => warm.getToken({ scopes: ['read:loans'] }));
const fmt = (n) => Math.round(n).toLocaleString('en-US');
console.log('cache-hit getToken');
console.log(`  baseline (Map.get + Promise.resolve): ${fmt(baseline)} ops/s`);
console.log(
  `  getToken() [default scopes]:          ${fmt(hitDefault)} ops/s  (baseline/getToken = ${(baseline / hitDefault).toFixed(1)}×)`,
);
console.log(
  `  getToken({ scopes }):                 ${fmt(hitScoped)} ops/s  (baseline/getToken = ${(baseline / hitScoped).toFixed(1)}×)`,
);

// 2. Token requests for 1,000 concurrent cold calls (single flight: the answer should be 1).
const rounds = 5;
const counts = [];
let elapsed = 0;
for (let round = 0; round < rounds; round++) {
  const cold = provider();
  const before = tokenRequests;
  const start = performance.now();
  await Promise.all(Array.from({ length: 1000 }, () => cold.getToken({ scopes: ['read:loans'] })));
  elapsed += performance.now() - start;
  counts.push(tokenRequests - before);
}
console.log('1,000 concurrent cold getToken calls');
console.log(`  token requests per round: ${counts.join(', ')} (${rounds} rounds)`);
console.log(`  time per round: ${(elapsed / rounds).toFixed(1)} ms (token endpoint latency 20 ms)`);

server.close();
