// List the first page of your loans.
// PARTNER_AUTH_URL, PARTNER_BASE_URL, PARTNER_CLIENT_ID and PARTNER_CLIENT_SECRET must be set.
import { createPartnerClient } from '@partner-lending/sdk';

const client = createPartnerClient();

// No token, scope or partner id to handle: the client asks for read:loans and fills in partner_id.
const page = await client.loans.list({ limit: 10 });
console.log(
  `first page of loans: ${page.items.length} of ${page.total ?? 'an unknown number'}, next offset ${page.nextOffset}`,
);
console.log('first loan:', page.items[0]);

// The HTTP answer too, when you want a header or the status.
const { data, status, headers } = await client.loans.list({ limit: 1 }).withResponse();
console.log(`status ${status}, X-Total-Count ${headers.get('x-total-count')}, ${data.items.length} loan`);
