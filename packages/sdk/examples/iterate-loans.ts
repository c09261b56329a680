// Walk through every loan, page after page (limit/offset under the hood).
import { createPartnerClient } from '@partner-lending/sdk';

const client = createPartnerClient();

let count = 0;
for await (const loan of client.loans.iterate({ pageSize: 10 })) {
  count++;
  if (count <= 3) console.log('loan', loan.id);
}
console.log(`${count} loans in all`);

// The pages themselves, when you want to checkpoint the offset:
for await (const page of client.loans.pages({ pageSize: 10 })) {
  console.log(`page at offset ${page.offset}: ${page.items.length} loans`);
}
