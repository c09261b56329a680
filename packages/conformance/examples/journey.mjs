// A partner's journey written with @partner-lending/sdk, run under the certification stage:
//   partner-conformance client --certify -- node examples/journey.mjs
// It reads the PARTNER_* variables the stage sets, lists loans (two calls at once, so that the single
// flight of token requests shows), then, round after round for JOURNEY_SECONDS (default 12, past the
// short phase so that its tokens expire and are renewed), lists loans and makes each create of the API
// its client is authorised for (PARTNER_SCOPES, as the partner console says) until it succeeded once.
// The SDK asks each operation's token for that operation's scope and reads the scope of every token
// answer: an operation whose scope was not granted is never called with a token lacking it (it throws
// ERR_SCOPE_NOT_GRANTED before sending); the next round asks for a token with that scope again. An
// operation the client is not authorised for is tried once: the SDK refuses it without calling it.
// A create answered 503 is never replayed: the next round makes it again as new business.
import { createPartnerClient, PartnerApiError } from '@partner-lending/sdk';

const seconds = Number(process.env.JOURNEY_SECONDS ?? 12);
const client = createPartnerClient();
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

const end = Date.now() + seconds * 1000;
let calls = 0;
while (Date.now() < end) {
  round += 1;
  const page = await attempt('list loans', () => client.loans.list({ limit: 10 }));
  if (page) calls += 1;
  for (const item of [...pending]) {
    const created = await attempt(item.what, item.call);
    if (created) {
      console.log(`${item.what}: ${created.id ?? 'done'}`);
      pending.splice(pending.indexOf(item), 1);
    }
  }
  await new Promise((resolve) => setTimeout(resolve, 400));
}
console.log(`listed loans ${calls} more times over ${seconds} s; ${pending.length} creates never succeeded`);
const unexpected = failures.filter(
  (code) => !['ERR_INTERNAL_SERVER', 'ERR_SCOPE_NOT_GRANTED', 'ERR_RATE_LIMIT'].includes(code),
);
if (unexpected.length > 0) {
  console.error(`unexpected errors: ${unexpected.join(', ')}`);
  process.exitCode = 1;
}
