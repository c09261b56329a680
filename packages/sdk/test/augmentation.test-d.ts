// Module augmentation as a partner writes it: declared once, it types list, iterate, pages and create.
// (The packed-tarball test checks the same from a consumer project under nodenext and bundler.)
import { createPartnerClient, type Loan } from '@partner-lending/sdk';
import { describe, expectTypeOf, it } from 'vitest';

declare module '@partner-lending/sdk' {
  interface Loan {
    id: string;
    amount: number;
  }
}

const client = createPartnerClient({
  authUrl: 'http://127.0.0.1:1',
  baseUrl: 'http://127.0.0.1:1',
  clientId: 'id',
  clientSecret: 'secret',
});

describe('module augmentation', () => {
  it('flows the declared loan fields into list, iterate and pages', async () => {
    expectTypeOf<Loan['id']>().toEqualTypeOf<string>();
    const page = await client.loans.list();
    expectTypeOf(page.items[0]!.amount).toEqualTypeOf<number>();
    // What did not compile before: a map over the loans of a page.
    expectTypeOf(page.items.map((loan) => loan.id)).toEqualTypeOf<string[]>();
    for await (const loan of client.loans.iterate()) expectTypeOf(loan.id).toEqualTypeOf<string>();
    for await (const p of client.loans.pages()) expectTypeOf(p.items[0]!.amount).toEqualTypeOf<number>();
    // @ts-expect-error amount is a number once declared
    const wrong: string = page.items[0]!.amount;
    void wrong;
  });
});
