// Configuration comes from the environment unless passed in code; code wins over the environment.
//   PARTNER_AUTH_URL       the authentication service           (option authUrl)
//   PARTNER_BASE_URL       the partner API                      (option baseUrl)
//   PARTNER_AUDIENCE       token audience, default the base URL (option audience)
//   PARTNER_CLIENT_ID      from the partner administration console (option clientId)
//   PARTNER_CLIENT_SECRET  from the partner administration console (option clientSecret)
import { ConfigurationError, createPartnerClient } from '@partner-lending/sdk';

// A missing value is reported with the option and the variable to set.
try {
  createPartnerClient({ env: {} });
} catch (error) {
  if (error instanceof ConfigurationError) console.log(error.message);
}

// Everything from process.env, with behaviour tuned in code.
const client = createPartnerClient({
  timeoutMs: 10_000, // the whole call: token lookup, attempts, waits and body
  maxRetries: 3, // GETs only; creates opt in per call
  logger: { warn: (message) => console.log(`[partner-sdk] ${message}`) },
});
const { items } = await client.loans.list({ limit: 1 });
console.log('connected; first loan:', items[0]?.id);
