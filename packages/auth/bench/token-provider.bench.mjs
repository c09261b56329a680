// Benchmarks for @partner-lending/auth (run with `pnpm bench`; they print figures, they assert nothing
// about speed). Uses the built package, so `turbo run bench` builds first.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import { startMock } from '@partner-lending/mock';
import { generateKeyPair, SignJWT } from 'jose';
import { createTokenProvider } from '../dist/index.js';

const AUDIENCE = 'https://partner-api.example';
const { privateKey } = await generateKeyPair('ES256');
let tokenRequests = 0;
/** Lifetime of the tokens issued, in seconds (the soak below switches it). */
let lifetimeSeconds = 3600;

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
      // exp counted from the start of the current second, as real servers (and the mock) do: a token
      // lives between lifetime - 1 and lifetime seconds, never an extra second of bench comfort.
      .setExpirationTime(iat + lifetimeSeconds)
      .sign(privateKey);
    // A little latency, as a real token endpoint has: concurrent callers pile up meanwhile.
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(
        JSON.stringify({
          access_token: jwt,
          token_type: 'bearer',
          expires_in: lifetimeSeconds,
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

const fmt = (n) => Math.round(n).toLocaleString('en-US');
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};
const range = (values) => `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`;

/** ns per call of `fn`, over `n` sequential awaited calls. */
async function nsPerCall(fn, n = 50_000) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn();
  return Number(process.hrtime.bigint() - start) / n;
}

// 1. Warm getToken against a baseline measured in the same run, interleaved A B A B… (drift, GC and
//    other processes hit both alike): the least a cache can do, a Map lookup handed back through a
//    promise. Goal ≤ 2×.
const warm = provider();
const scopes = Object.freeze(['read:loans']); // the SDK passes one frozen array per operation
await warm.getToken({ scopes });
await warm.getToken();
// A provider holding only the broad token (no scope asked: every authorised scope granted), asked
// for a narrower set: served by the broad token through the scoped fast path.
const broad = provider();
await broad.getToken();
await broad.getToken({ scopes });
const map = new Map([['key', { accessToken: 'x' }]]);
const baseline = () => Promise.resolve(map.get('key'));
const variants = {
  'getToken()': () => warm.getToken(),
  'getToken({ scopes }) (frozen array, as the SDK)': () => warm.getToken({ scopes }),
  "getToken({ scopes: ['read:loans'] }) (new array)": () => warm.getToken({ scopes: ['read:loans'] }),
  'getToken({ scopes }) served by a broader token held': () => broad.getToken({ scopes }),
};
for (const fn of [baseline, ...Object.values(variants)]) await nsPerCall(fn, 20_000); // warm-up
const ROUNDS = 7;
const ratios = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
const baseNs = [];
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, fn] of Object.entries(variants)) {
    const a = await nsPerCall(baseline);
    const b = await nsPerCall(fn);
    baseNs.push(a);
    ratios[name].push(b / a);
  }
}
console.log(`warm getToken vs Map.get + Promise.resolve (${ROUNDS} interleaved rounds; goal ≤ 2×)`);
console.log(`  baseline: median ${median(baseNs).toFixed(0)} ns per call`);
for (const [name, values] of Object.entries(ratios)) {
  console.log(`  ${name}: median ${median(values).toFixed(2)}× (range ${range(values)})`);
}

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

// 3. Short-lived tokens under load: 2-s tokens, 200 concurrent callers, 10 lifetimes. Goals: ≤ 1.2
//    token requests per lifetime, ≥ 99 % of calls served from the cache, p99 call latency within 2×
//    the p50 of the same load with a 1-hour token.
async function soak(seconds, durationMs) {
  lifetimeSeconds = seconds;
  let hits = 0;
  let calls = 0;
  const p = createTokenProvider({
    tokenUrl,
    clientId: 'soak-client',
    clientSecret: 'bench-secret',
    audience: AUDIENCE,
    onEvent: (event) => {
      if (event.type === 'cache-hit') hits++;
    },
  });
  await p.getToken({ scopes }); // the one cold request is not part of the soak
  hits = 0;
  const before = tokenRequests;
  const latencies = [];
  const until = performance.now() + durationMs;
  const caller = async () => {
    while (performance.now() < until) {
      const start = performance.now();
      await p.getToken({ scopes });
      latencies.push(performance.now() - start);
      calls++;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  await Promise.all(Array.from({ length: 200 }, caller));
  latencies.sort((a, b) => a - b);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return {
    waited: latencies.filter((ms) => ms > 1).length,
    max: latencies.at(-1),
    requests: tokenRequests - before,
    calls,
    hitRate: hits / calls,
    p50: at(0.5),
    p99: at(0.99),
    lifetimes: durationMs / (seconds * 1000),
  };
}
const long = await soak(3600, 4_000);
const short = await soak(2, 20_000);
const perLifetime = short.requests / short.lifetimes;
console.log('200 concurrent callers, one getToken every 10 ms each');
console.log(
  `  1-hour tokens, 4 s: ${fmt(long.calls)} calls, ${long.requests} token requests, cache hits ${(long.hitRate * 100).toFixed(2)} %, p50 ${(long.p50 * 1000).toFixed(1)} µs, p99 ${(long.p99 * 1000).toFixed(1)} µs, calls over 1 ms ${long.waited}`,
);
console.log(
  `  2-s tokens, 10 lifetimes: ${fmt(short.calls)} calls, ${short.requests} token requests = ${perLifetime.toFixed(2)} per lifetime (goal ≤ 1.2), cache hits ${(short.hitRate * 100).toFixed(2)} % (goal ≥ 99 %), p50 ${(short.p50 * 1000).toFixed(1)} µs, p99 ${(short.p99 * 1000).toFixed(1)} µs, calls over 1 ms ${short.waited}, slowest ${short.max.toFixed(2)} ms`,
);
console.log(
  `  p99 of the 2-s run / p50 of the 1-hour run: ${(short.p99 / long.p50).toFixed(2)}× (goal ≤ 2×; at these sub-10-µs figures the ratio measures event-loop scheduling, so compare also p99 to p99: ${(short.p99 / long.p99).toFixed(2)}×, and the calls over 1 ms — a caller that waited for a token takes a round trip)`,
);

// 4. The project's mock, 2-s tokens, one process (the fleet bench of token-store-redis runs four). The
//    lifetime is what the token endpoint grants: the deployed profile answers expires_in 1 (one
//    second less than the JWT's 2-s exp, as the deployed service does); the RFC 9068 profile answers
//    expires_in 2 with exp a whole second. Goal: ≤ 1.2 token requests per lifetime, 0 expired.
async function mockSoak(profile, durationMs) {
  const mock = await startMock({ tokenTtlSeconds: 2, profile });
  const [client] = mock.clients;
  let received = 0;
  const p = createTokenProvider({
    authUrl: mock.authUrl,
    clientId: client.clientId,
    clientSecret: client.clientSecret,
    audience: mock.audience,
    onEvent: (event) => {
      if (event.type === 'token-received') received++;
    },
  });
  const first = await p.getToken();
  const lifetimeMs = Math.round((first.expiresAt - Date.now()) / 1000) * 1000 || 1000;
  const before = mock.tokenRequestCount();
  let calls = 0;
  let expired = 0;
  let slowest = 0;
  const until = performance.now() + durationMs;
  const caller = async () => {
    while (performance.now() < until) {
      const start = performance.now();
      const token = await p.getToken();
      slowest = Math.max(slowest, performance.now() - start);
      if (token.expiresAt <= Date.now()) expired++;
      calls++;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  await Promise.all(Array.from({ length: 50 }, caller));
  const requests = mock.tokenRequestCount() - before;
  await mock.close();
  return { requests, calls, expired, slowest, lifetimeMs, lifetimes: durationMs / lifetimeMs, received };
}
console.log('the mock, 2-s tokens (tokenTtlSeconds 2), 50 concurrent callers, 12 s');
for (const profile of ['deployed', 'rfc9068']) {
  const r = await mockSoak(profile, 12_000);
  console.log(
    `  ${profile.padEnd(8)}: lifetime granted ${r.lifetimeMs} ms, ${r.requests} token requests in ${fmt(r.lifetimes)} lifetimes = ${(r.requests / r.lifetimes).toFixed(2)} per lifetime (goal ≤ 1.2), ${fmt(r.calls)} calls, ${r.expired} expired, slowest call ${r.slowest.toFixed(1)} ms`,
  );
}

server.close();
