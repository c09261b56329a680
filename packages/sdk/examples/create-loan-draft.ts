// Create a loan draft. The API documents no idempotency key, so a create is never retried on its own.
import { createPartnerClient, PartnerApiError } from '@partner-lending/sdk';

const client = createPartnerClient();

try {
  const draft = await client.loanDrafts.create({ amount: 2500, currency: 'EUR', termMonths: 12 });
  console.log('created loan draft', draft.id);
} catch (error) {
  if (error instanceof PartnerApiError) {
    // status, errorCode (OAuth/bearer code), requestId: enough to act on or to quote to support.
    console.error(`${error.code} (status ${error.status}, request id ${error.requestId}): ${error.message}`);
  }
  throw error;
}
