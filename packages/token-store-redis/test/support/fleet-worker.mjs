// One process of a test fleet. Reads its job from the FLEET_JOB environment variable (JSON), prints
// "READY" once its store is connected, waits for "go" on stdin (so that the fleet starts together),
// then prints one JSON line with what happened. Tokens are printed as digests only, never whole.
import { createHash } from 'node:crypto';
import { createInterface } from 'node:readline';
import { createTokenProvider } from '@partner-lending/auth';
import { createRedisTokenStore } from '../../dist/index.js';
import { CLIENT_ID, CLIENT_SECRET } from './token-server.mjs';

const job = JSON.parse(process.env.FLEET_JOB ?? '{}');
const digest = (token) => createHash('sha256').update(token).digest('hex').slice(0, 12);
const events = [];
const store = createRedisTokenStore({
  url: job.redisUrl,
  encryptionKey: job.encryptionKey,
  ...(job.lockLeaseMs ? { lockLeaseMs: job.lockLeaseMs } : {}),
  onEvent: (event) => events.push(event.type),
});

/** The token request a provider would make, done by hand so the store can be driven directly. */
async function fetchToken() {
  const response = await fetch(job.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
      audience: job.audience,
    }),
  });
  const body = await response.json();
  if (!response.ok)
    throw Object.assign(new Error(`token endpoint ${response.status}`), { code: 'ERR_TOKEN_REQUEST' });
  const now = Date.now();
  return {
    accessToken: body.access_token,
    tokenType: 'Bearer',
    expiresAt: now + body.expires_in * 1000,
    obtainedAt: now,
    grantedScopes: body.scope.split(' '),
    partnerId: body.partnerId,
    issuer: 'test',
    jti: body.jti,
  };
}

const key = job.key ?? 'fleet-test-key';
await store.get(key).catch(() => {});
console.log('READY');
const lines = createInterface({ input: process.stdin });
await new Promise((resolve) => lines.once('line', resolve));

if (job.mode === 'hold') {
  // Takes the lock and never finishes: the test kills this process while it holds the lock.
  store.singleFlight(
    key,
    () => {
      console.log('LOCKED');
      return new Promise(() => {});
    },
    { timeoutMs: job.timeoutMs ?? 10_000 },
  );
} else {
  let provider;
  if (job.mode === 'provider' || job.mode === 'provider-memory') {
    provider = createTokenProvider({
      tokenUrl: job.tokenUrl,
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      audience: job.audience,
      // provider-memory: the control, each process with the default in-memory store.
      ...(job.mode === 'provider' ? { store } : {}),
    });
  }
  const outcomes = await Promise.allSettled(
    Array.from({ length: job.callers ?? 1 }, () =>
      provider
        ? provider.getToken().then((t) => t.accessToken)
        : store
            .singleFlight(key, fetchToken, { timeoutMs: job.timeoutMs ?? 10_000 })
            .then((t) => t.accessToken),
    ),
  );
  const tokens = new Set();
  const errors = [];
  for (const outcome of outcomes) {
    if (outcome.status === 'fulfilled') tokens.add(digest(outcome.value));
    else errors.push(outcome.reason?.code ?? String(outcome.reason));
  }
  console.log(JSON.stringify({ ok: outcomes.length - errors.length, errors, tokens: [...tokens], events }));
  await store.close();
  lines.close();
}
