// A partner's journey written with @partner-lending/sdk, run under the certification stage:
//   partner-conformance client --certify -- node examples/journey.mjs
// It reads the PARTNER_* variables the stage sets, lists loans (two calls at once, so that the single
// flight of token requests shows), then, round after round, lists loans and makes each create of the API
// its client is authorised for (PARTNER_SCOPES, as the partner console says) until it succeeded once.
// It stops when its work is done: every create succeeded, and two lists were made with a long-lived
// token (one living a minute or more). Under the default certification plan the stage issues 5-s
// tokens for its first 15 s, so that renewal shows, and long-lived ones after, on which token reuse is
// judged: the journey ends about 17 s in, as soon as the plan has seen all it judges. JOURNEY_SECONDS
// (default 60) bounds it: past it the journey stops whatever is left.
// The SDK asks each operation's token for that operation's scope and reads the scope of every token
// answer: an operation whose scope was not granted is never called with a token lacking it (it throws
// ERR_SCOPE_NOT_GRANTED before sending); the next round asks for a token with that scope again. An
// operation the client is not authorised for is tried once: the SDK refuses it without calling it.
// A create answered 503 is never replayed: the next round makes it again as new business.
import { createPartnerClient, PartnerApiError } from '@partner-lending/sdk';

const seconds = Number(process.env.JOURNEY_SECONDS ?? 60);
// Whether the token for listing loans (scope read:loans) now lives a minute or more: the SDK's token
// events say what each token answer granted and until when.
let longLived = false;
const client = createPartnerClient({
  onTokenEvent: (event) => {
    if (event.type === 'token-received' && event.grantedScopes.includes('read:loans'))
      longLived = event.expiresAt - Date.now() >= 60_000;
  },
});
const failures = [];
const authorised = (process.env.PARTNER_SCOPES ?? '').split(' ').filter(Boolean);

async function attempt(what, call) {
  try {
    return await call();
  } catch (error) {
    if (!(error instanceof PartnerApiError)) throw error;
    // Expected along the way: a create refused 503 (never replayed), a scope not granted (yet).
    console.log(`${what}: ${error.code}${error.status ? ` (status ${error.status})` : ''}`);
    failures.push(error.code);
    return undefined;
  }
}

const [first, second] = await Promise.all([
  client.loans.list({ limit: 5 }),
  client.loans.list({ limit: 5, offset: 5 }),
]);
console.log(`listed ${first.items.length + second.items.length} loans`);
const loanId = first.items[0]?.id;

let round = 0;
const creates = [
  {
    what: 'create loan draft',
    scope: 'create:loan_draft',
    call: () => client.loanDrafts.create({ amount: 2500 + round, currency: 'EUR', termMonths: 12 }),
  },
  {
    what: 'create journal update',
    scope: 'create:journal_update',
    call: () => client.journals.create({ loanId, note: `round ${round}` }),
  },
  {
    what: 'create repayment',
    scope: 'create:repayment',
    call: () => client.repayments.create({ loanId, amount: 100 + round }),
  },
];
// Not authorised for it (when the console's scopes are known): tried once, never again.
const pending = creates.filter((item) => authorised.length === 0 || authorised.includes(item.scope));
for (const item of creates.filter((each) => !pending.includes(each))) await attempt(item.what, item.call);

const started = Date.now();
const end = started + seconds * 1000;
let calls = 0;
let longLivedCalls = 0;
const done = () => pending.length === 0 && longLivedCalls >= 2;
while (Date.now() < end && !done()) {
  round += 1;
  const withLongLived = longLived;
  const page = await attempt('list loans', () => client.loans.list({ limit: 10 }));
  if (page) calls += 1;
  if (page && withLongLived) longLivedCalls += 1;
  for (const item of [...pending]) {
    const created = await attempt(item.what, item.call);
    if (created) {
      console.log(`${item.what}: ${created.id ?? 'done'}`);
      pending.splice(pending.indexOf(item), 1);
    }
  }
  await new Promise((resolve) => setTimeout(resolve, 400));
}
const took = ((Date.now() - started) / 1000).toFixed(1);
console.log(
  `listed loans ${calls} more times over ${took} s (${done() ? 'done' : `stopped at JOURNEY_SECONDS=${seconds}`}); ${pending.length} creates never succeeded`,
);
const unexpected = failures.filter(
  (code) => !['ERR_INTERNAL_SERVER', 'ERR_SCOPE_NOT_GRANTED', 'ERR_RATE_LIMIT'].includes(code),
);
if (unexpected.length > 0) {
  console.error(`unexpected errors: ${unexpected.join(', ')}`);
  process.exitCode = 1;
}
