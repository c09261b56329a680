// One process of the benchmark fleet (see fleet.bench.mjs). Job in FLEET_JOB (JSON); prints READY,
// waits for "go" on stdin, runs, prints one JSON line of counts. Never prints a token.
import { createInterface } from 'node:readline';
import { createTokenProvider } from '@partner-lending/auth';
import { createRedisTokenStore } from '../dist/index.js';
import { CLIENT_ID, CLIENT_SECRET } from '../test/support/token-server.mjs';

const job = JSON.parse(process.env.FLEET_JOB ?? '{}');
const readyAt = [];
const store =
  job.store === 'redis'
    ? createRedisTokenStore({
        url: job.redisUrl,
        encryptionKey: job.encryptionKey,
        onEvent: (event) => {
          if (event.type === 'redis-ready') readyAt.push(Date.now());
        },
      })
    : undefined;
const storeErrors = {};
const provider = createTokenProvider({
  tokenUrl: job.tokenUrl,
  clientId: job.clientId ?? CLIENT_ID,
  clientSecret: job.clientSecret ?? CLIENT_SECRET,
  audience: job.audience,
  ...(store ? { store } : {}),
  onEvent: (event) => {
    if (event.type === 'store-failed') storeErrors[event.operation] = (storeErrors[event.operation] ?? 0) + 1;
  },
});
if (store) await store.get('warm-up').catch(() => {});
console.log('READY');
const lines = createInterface({ input: process.stdin });
await new Promise((resolve) => lines.once('line', resolve));

let calls = 0;
let failed = 0;
let expired = 0;
const errors = {};
const call = async () => {
  calls++;
  try {
    const token = await provider.getToken();
    if (token.expiresAt <= Date.now()) expired++;
  } catch (error) {
    failed++;
    const code = error?.code ?? error?.name ?? 'unknown';
    errors[code] = (errors[code] ?? 0) + 1;
  }
};

if (job.mode === 'cold') {
  await Promise.all(Array.from({ length: job.callers }, call));
} else {
  const until = Date.now() + job.durationMs;
  await Promise.all(
    Array.from({ length: job.callers }, async () => {
      while (Date.now() < until) {
        await call();
        await new Promise((r) => setTimeout(r, 10 + Math.random() * 40));
      }
    }),
  );
}
console.log(JSON.stringify({ calls, failed, expired, errors, storeErrors, readyAt }));
await store?.close();
lines.close();
