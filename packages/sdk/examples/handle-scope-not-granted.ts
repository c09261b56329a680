// A partner that is not authorised for create:repayment gets ScopeNotGrantedError before anything is
// sent to the API. The fix is in the partner administration console, not in code.
import { createPartnerClient, InsufficientScopeError, ScopeNotGrantedError } from '@partner-lending/sdk';

const client = createPartnerClient();

try {
  await client.repayments.create({ loanId: 'loan-0001', amount: 100 });
  console.log('repayment created');
} catch (error) {
  if (error instanceof ScopeNotGrantedError) {
    console.log(`not authorised for ${error.missingScopes.join(', ')}: ${error.message}`);
  } else if (error instanceof InsufficientScopeError) {
    // The API itself refused the token's scope (403 insufficient_scope).
    console.log(`the API wants ${error.scope}: ${error.message}`);
  } else {
    throw error;
  }
}
