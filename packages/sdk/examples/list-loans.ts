// List the first page of your loans.
// PARTNER_AUTH_URL, PARTNER_BASE_URL, PARTNER_CLIENT_ID and PARTNER_CLIENT_SECRET must be set.
import { createPartnerClient } from '@partner-lending/sdk';

const client = createPartnerClient();

// No token, scope or partner id to handle: the client asks for read:loans and fills in partner_id.
const loans = await client.loans.list({ limit: 10 });
console.log('first page of loans:', loans);
