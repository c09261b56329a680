// The cost of redacting what a stage records (run with `pnpm bench`; it prints figures and asserts only that
// both implementations give the same text): ns per `redact` call for the fields of a recorded exchange,
// the Redactor as it is against the implementation before it was made cheaper (frozen in test/common/redact-before.mjs), in the
// same process, interleaved rounds, medians.
//
// The Redactor is internal (not exported by the package), so this bench compiles src/common/redact.ts with
// tsup to a temporary folder (the build the package's dist uses: esbuild, target node20). The hosted stage's
// own `redact` (`openHostedStage(…).redact`, from dist) is measured beside it, on the stage's exchanges: the
// stage registers its client's credentials only, never the tokens it issues.
//
// It also measures a new run's first token request (50 redactors that never ran), where the implementation
// before compiled a regular expression per secret.
//
// Knobs: BENCH_ROUNDS (default 7), BENCH_ITERATIONS (exchanges per round, default 2000), BENCH_TOKENS (the
// numbers of registered tokens to measure, default 0,1,10,100).
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'tsup';
import { generateStageSigningKey, openHostedStage } from '../dist/index.js';
// The implementation before (frozen): the reference the equivalence test holds `Redactor` to.
import { RedactorBefore } from '../test/common/redact-before.mjs';

const rounds = Number(process.env.BENCH_ROUNDS ?? 7);
const iterations = Number(process.env.BENCH_ITERATIONS ?? 2000);
const tokenCounts = (process.env.BENCH_TOKENS ?? '0,1,10,100').split(',').map(Number);
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

// ---- The implementation now, compiled as the package's build compiles it.
const out = await mkdtemp(join(tmpdir(), 'redact-bench-'));
let Redactor;
try {
  await build({
    entry: [fileURLToPath(new URL('../src/common/redact.ts', import.meta.url))],
    outDir: out,
    format: ['esm'],
    target: 'node20',
    dts: false,
    sourcemap: false,
    silent: true,
    config: false,
  });
  ({ Redactor } = await import(join(out, 'redact.js')));
} finally {
  await rm(out, { recursive: true, force: true });
}

// ---- A run's client (as newStageClient makes one) and the exchanges its journey makes.
const clientId = `cert-${randomBytes(8).toString('hex')}`;
const clientSecret = randomBytes(24).toString('base64url');
const b64 = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
const jwt = (n) =>
  `${b64({ alg: 'RS256', kid: 'stage-key-1', typ: 'at+jwt' })}.${b64({
    iss: 'https://certify.example/runs/r-0123456789/auth',
    sub: clientId,
    aud: 'https://certify.example/runs/r-0123456789/api',
    scope: 'read:loans write:loans',
    partner_id: 'partner-cert-a1b2c3',
    iat: 1_790_000_000 + n,
    exp: 1_790_000_300 + n,
    jti: randomBytes(16).toString('hex'),
  })}.${randomBytes(256).toString('base64url')}`;
const loans = JSON.stringify({
  data: Array.from({ length: 8 }, (_, i) => ({
    id: `loan_${String(i).padStart(6, '0')}`,
    status: 'active',
    principal: { amount: `${(i + 1) * 12500}.00`, currency: 'EUR' },
    borrower: { id: `bor_${i}`, name: `Borrower ${i}` },
    createdAt: '2026-11-26T10:00:00Z',
  })),
  next: 'cursor_abcdef',
});

/** The texts the stage redacts for one exchange, in the order handler.ts and request-reader.ts redact them. */
function tokenRequest(token) {
  const body = `grant_type=client_credentials&scope=read%3Aloans+write%3Aloans&audience=${encodeURIComponent('https://certify.example/runs/r-0123456789/api')}`;
  return [
    '/oauth/token', // target (keptValue); the Basic authorization header is never redacted, only described
    'application/x-www-form-urlencoded', // content-type
    'application/json', // accept
    body, // body (keptValue)
    'client_credentials', // form: grant_type
    'read:loans write:loans', // form: scope
    'https://certify.example/runs/r-0123456789/api', // form: audience
    'application/json', // response content-type
    'no-store', // response cache-control
    JSON.stringify({
      access_token: token,
      token_type: 'Bearer',
      expires_in: 300,
      scope: 'read:loans write:loans',
    }),
  ];
}
function apiCall(token) {
  return [
    '/v1/loans?status=active&limit=8', // target
    `Bearer ${token}`, // authorization
    'application/json', // accept
    'Bearer', // bearer scheme
    'application/json', // response content-type
    loans.slice(0, 1200), // response body, the window the stage redacts
  ];
}

function measure(redact, texts) {
  // Fresh strings for every exchange, as a server reads them off its sockets (the same string object over
  // and over would let V8 reuse work across calls that it cannot in a stage).
  const exchanges = Array.from({ length: iterations }, () =>
    texts.map((text) => Buffer.from(text).toString()),
  );
  let sink = 0;
  const started = process.hrtime.bigint();
  for (const exchange of exchanges) for (const text of exchange) sink += redact(text).length;
  const ns = Number(process.hrtime.bigint() - started);
  if (sink === 0) throw new Error('nothing redacted');
  return ns / (iterations * texts.length);
}

function compare(label, before, now, texts) {
  for (const text of texts) {
    const a = before(text);
    const b = now(text);
    if (a !== b) throw new Error(`${label}: the outputs differ for a ${text.length}-char text`);
  }
  const a = [];
  const b = [];
  for (let round = 0; round < rounds; round += 1) {
    a.push(measure(before, texts));
    b.push(measure(now, texts));
  }
  const [x, y] = [median(a), median(b)];
  console.log(
    `${label.padEnd(52)} before ${x.toFixed(0).padStart(6)} ns/redact, now ${y.toFixed(0).padStart(5)} ns/redact, ${(x / y).toFixed(1)}× cheaper`,
  );
  return { before: x, now: y };
}

function redactors(tokens) {
  const pair = [new RedactorBefore(), new Redactor()];
  for (const r of pair) {
    r.addSecret(clientSecret, '[client_secret]');
    r.addSecret(clientId, '[client_id]');
    r.addBasicCredentials(clientId, clientSecret, '[client_credentials]');
    for (const token of tokens) r.addToken(token);
  }
  return pair;
}

console.log(
  `redact, ${rounds} rounds × ${iterations} exchanges, medians (load average ${(await import('node:os'))
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')})`,
);
for (const issued of tokenCounts) {
  const tokens = Array.from({ length: Math.max(issued, 1) }, (_, n) => jwt(n));
  const [before, now] = redactors(tokens.slice(0, issued));
  const last = tokens.at(-1);
  const suffix =
    issued === 0 ? 'no token registered (the stage)' : `${issued} token${issued > 1 ? 's' : ''} registered`;
  compare(
    `token request (Basic + form), ${suffix}`,
    (t) => before.redact(t),
    (t) => now.redact(t),
    tokenRequest(last),
  );
  compare(
    `API call (Bearer JWT), ${suffix}`,
    (t) => before.redact(t),
    (t) => now.redact(t),
    apiCall(last),
  );
}

// A new run's first exchange: its redactor has never run. Each secret's percent-encoded form was one
// regular expression (the implementation before), which V8 compiles at its first use and again, to machine
// code, at its second: with runs starting together, every run paid that in the same second.
{
  const fresh = 50;
  const firstExchange = (make) => {
    const made = Array.from({ length: fresh }, () => {
      const r = make();
      const id = `cert-${randomBytes(8).toString('hex')}`;
      const secret = randomBytes(24).toString('base64url');
      r.addSecret(secret, '[client_secret]');
      r.addSecret(id, '[client_id]');
      r.addBasicCredentials(id, secret, '[client_credentials]');
      // The form a client posts: its credentials in the body, the scope percent-encoded.
      const body = new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: id,
        client_secret: secret,
        scope: 'read:loans',
      }).toString();
      return [r, [...tokenRequest(jwt(0)), body, body]];
    });
    const started = process.hrtime.bigint();
    for (const [r, texts] of made) for (const text of texts) r.redact(text);
    return Number(process.hrtime.bigint() - started) / 1000 / fresh;
  };
  const a = [];
  const b = [];
  for (let round = 0; round < rounds; round += 1) {
    a.push(firstExchange(() => new RedactorBefore()));
    b.push(firstExchange(() => new Redactor()));
  }
  const [x, y] = [median(a), median(b)];
  console.log(
    `${`a new run's first token request (${fresh} runs)`.padEnd(52)} before ${x.toFixed(0).padStart(6)} µs/run,    now ${y.toFixed(0).padStart(5)} µs/run,    ${(x / y).toFixed(1)}× cheaper`,
  );
}

// The hosted stage itself, from dist: what the certification service calls for each recorded field.
const stage = await openHostedStage({
  ledger: {},
  client: { clientId, clientSecret, partnerId: 'partner-cert-a1b2c3', authorizedScopes: ['read:loans'] },
  authUrl: 'https://certify.example/runs/r-0123456789/auth',
  baseUrl: 'https://certify.example/runs/r-0123456789/api',
  startedAtEpoch: Date.now(),
  ttlSeconds: 300,
  longTtlSeconds: 3600,
  signingKey: await generateStageSigningKey(),
  tokenDelayMs: 0,
  apiDelayMs: 0,
});
try {
  const [before] = redactors([]);
  const token = jwt(0);
  compare('hosted stage (dist), token request', (t) => before.redact(t), stage.redact, tokenRequest(token));
  compare('hosted stage (dist), API call', (t) => before.redact(t), stage.redact, apiCall(token));
} finally {
  await stage.close();
}
console.log(
  `load average after: ${(await import('node:os'))
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
