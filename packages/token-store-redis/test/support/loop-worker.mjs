// One process of a fleet under faults: a token provider with the Redis store, calling getToken() in a
// loop (every `intervalMs`) for `durationMs` once released with "go" on stdin. Each call is timed and
// each resolved token checked against the clock at the moment it is resolved (expiresAt and the JWT
// exp). Prints one JSON line at the end; tokens appear as digests only, never whole.
import { createHash } from 'node:crypto';
import { createInterface } from 'node:readline';
import { createTokenProvider } from '@partner-lending/auth';
import { createRedisTokenStore } from '../../dist/index.js';

const job = JSON.parse(process.env.FLEET_JOB ?? '{}');
const digest = (token) => createHash('sha256').update(token).digest('hex').slice(0, 12);
const storeEvents = {};
const providerEvents = {};
const count = (into, type) => {
  into[type] = (into[type] ?? 0) + 1;
};
const store = createRedisTokenStore({
  url: job.redisUrl,
  encryptionKey: job.encryptionKey,
  ...(job.commandTimeoutMs ? { commandTimeoutMs: job.commandTimeoutMs } : {}),
  onEvent: (event) => count(storeEvents, event.type),
});
const provider = createTokenProvider({
  tokenUrl: job.tokenUrl,
  clientId: job.clientId,
  clientSecret: job.clientSecret,
  audience: job.audience,
  dangerouslyAllowInsecureHttp: true,
  store,
  onEvent: (event) => {
    if (event.type !== 'cache-hit') count(providerEvents, event.type);
  },
});

const jwtExp = (jwt) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8')).exp;

await store.get('warm-up').catch(() => {});
console.log('READY');
const lines = createInterface({ input: process.stdin });
await new Promise((resolve) => lines.once('line', resolve));

const started = Date.now();
const result = {
  calls: 0,
  failed: 0,
  errors: {},
  maxWaitMs: 0,
  slowCalls: 0,
  expired: 0,
  expiredByExp: 0,
  /** Distinct tokens served per second since "go" (index = second). */
  tokensPerSecond: [],
};
const seen = [];
while (Date.now() - started < job.durationMs) {
  const t0 = performance.now();
  try {
    const token = await provider.getToken(job.timeoutMs ? { timeoutMs: job.timeoutMs } : {});
    const now = Date.now();
    if (token.expiresAt <= now) result.expired++;
    if (jwtExp(token.accessToken) * 1000 <= now) result.expiredByExp++;
    const second = Math.floor((now - started) / 1000);
    seen[second] ??= new Set();
    seen[second].add(digest(token.accessToken));
  } catch (error) {
    result.failed++;
    const code = error?.code ?? String(error);
    result.errors[code] = (result.errors[code] ?? 0) + 1;
  }
  const waited = performance.now() - t0;
  if (waited > result.maxWaitMs) result.maxWaitMs = Math.round(waited);
  if (waited > (job.slowMs ?? 1_000)) result.slowCalls++;
  result.calls++;
  await new Promise((resolve) => setTimeout(resolve, job.intervalMs ?? 10));
}
result.tokensPerSecond = Array.from(seen, (set) => set?.size ?? 0);
console.log(JSON.stringify({ ...result, storeEvents, providerEvents }));
await store.close();
lines.close();
