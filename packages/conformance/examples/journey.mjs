// A partner's journey written with @partner-lending/sdk, run under the certification stage:
//   partner-conformance client --ttl 4 --certify -- node examples/journey.mjs
// It reads the PARTNER_* variables the stage sets, lists loans (two calls at once, so that the single
// flight of token requests shows), creates a loan draft, tries an operation the client is not granted,
// and keeps listing for JOURNEY_SECONDS (default 12) so that its tokens expire and are renewed.
import { createPartnerClient, PartnerApiError } from '@partner-lending/sdk';

const seconds = Number(process.env.JOURNEY_SECONDS ?? 12);
const client = createPartnerClient();
const failures = [];

async function attempt(what, call) {
  try {
    return await call();
  } catch (error) {
    if (!(error instanceof PartnerApiError)) throw error;
    // Expected along the way: a create refused 503 (never replayed), an operation outside the grant.
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

const draft = await attempt('create loan draft', () =>
  client.loanDrafts.create({ amount: 2500, currency: 'EUR', termMonths: 12 }),
);
if (draft) console.log(`created loan draft ${draft.id}`);
await attempt('create repayment', () =>
  client.repayments.create({ loanId: first.items[0]?.id, amount: 100 }),
);

const end = Date.now() + seconds * 1000;
let calls = 0;
while (Date.now() < end) {
  const page = await attempt('list loans', () => client.loans.list({ limit: 10 }));
  if (page) calls += 1;
  await new Promise((resolve) => setTimeout(resolve, 400));
}
console.log(`listed loans ${calls} more times over ${seconds} s`);
const unexpected = failures.filter(
  (code) => !['ERR_INTERNAL_SERVER', 'ERR_SCOPE_NOT_GRANTED'].includes(code),
);
if (unexpected.length > 0) {
  console.error(`unexpected errors: ${unexpected.join(', ')}`);
  process.exitCode = 1;
}
