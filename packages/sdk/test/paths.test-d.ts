import { describe, expectTypeOf, it } from 'vitest';
import {
  createPartnerClient,
  type JournalUpdateInput,
  type Loan,
  type LoanDraft,
  type Page,
  type Repayment,
  type WithResponse,
} from '../src/index.js';

const client = createPartnerClient({
  authUrl: 'http://127.0.0.1:1',
  baseUrl: 'http://127.0.0.1:1',
  clientId: 'id',
  clientSecret: 'secret',
});

describe('typed paths', () => {
  it('accepts the loans path with partner_id, limit and offset', () => {
    const result = client.GET('/v3/partner/{partner_id}/loans', {
      params: { path: { partner_id: 'p1' }, query: { limit: 10, offset: 0 } },
    });
    type Data = Awaited<typeof result>['data'];
    expectTypeOf<Data>().toEqualTypeOf<Record<string, unknown>[] | Record<string, unknown> | undefined>();
  });

  it('lets partner_id be left out: the client fills it in from the token', () => {
    client.GET('/v3/partner/{partner_id}/loans');
    client.GET('/v3/partner/{partner_id}/loans', { params: { query: { limit: 10 } } });
    client.POST('/v3/partner/{partner_id}/loan_draft', { body: { amount: 1 } });
  });

  it('types the create bodies as open JSON objects', () => {
    const result = client.POST('/v3/partner/{partner_id}/repayments', {
      params: { path: { partner_id: 'p1' } },
      body: { amount: 10, anything: ['goes'] },
    });
    expectTypeOf<Awaited<typeof result>['data']>().toEqualTypeOf<Record<string, unknown> | undefined>();
  });

  it('rejects what the spec does not allow', () => {
    // @ts-expect-error the path does not exist in the spec (loan, not loans)
    client.GET('/v3/partner/{partner_id}/loan', { params: { path: { partner_id: 'p1' } } });
    // @ts-expect-error partner_id, when given, is a string
    client.GET('/v3/partner/{partner_id}/loans', { params: { path: { partner_id: 7 } } });
    // @ts-expect-error the token endpoint is on the auth server, not a path of this client
    client.POST('/oauth/token', { body: {} });
    client.GET('/v3/partner/{partner_id}/loans', {
      // @ts-expect-error limit is an integer, not a string
      params: { path: { partner_id: 'p1' }, query: { limit: '10' } },
    });
    // @ts-expect-error the loans path has no POST
    client.POST('/v3/partner/{partner_id}/loans', { params: { path: { partner_id: 'p1' } } });
    client.POST('/v3/partner/{partner_id}/journals', {
      params: { path: { partner_id: 'p1' } },
      // @ts-expect-error a create body is an object, not an array
      body: [1, 2],
    });
    // @ts-expect-error a create needs its body
    client.POST('/v3/partner/{partner_id}/journals', { params: { path: { partner_id: 'p1' } } });
  });
});

describe('resource methods', () => {
  it('return one page type from list, the declared types from create', () => {
    expectTypeOf(client.loans.list()).resolves.toEqualTypeOf<Page<Loan>>();
    expectTypeOf(client.loans.list()).resolves.toHaveProperty('items').toEqualTypeOf<Loan[]>();
    expectTypeOf(client.loans.list()).resolves.toHaveProperty('total').toEqualTypeOf<number | undefined>();
    expectTypeOf(client.loanDrafts.create({ amount: 1 })).resolves.toEqualTypeOf<LoanDraft>();
    expectTypeOf(client.journals.create).parameter(0).toEqualTypeOf<JournalUpdateInput>();
    expectTypeOf(client.repayments.create).returns.resolves.toEqualTypeOf<Repayment>();
    // @ts-expect-error a create body is an object
    client.repayments.create('amount=1');
    // @ts-expect-error limit is a number
    client.loans.list({ limit: '10' });
  });

  it('withResponse gives the data with status, headers and the raw Response', () => {
    const answer = client.loans.list().withResponse();
    expectTypeOf(answer).resolves.toEqualTypeOf<WithResponse<Page<Loan>>>();
    expectTypeOf(answer).resolves.toHaveProperty('response').toEqualTypeOf<Response>();
    expectTypeOf(client.loanDrafts.create({}).withResponse()).resolves.toHaveProperty('status').toBeNumber();
  });

  it('iterate items typed by the selector', () => {
    const loans = client.loans.iterate();
    expectTypeOf(loans).toEqualTypeOf<AsyncGenerator<Loan, void, undefined>>();
    const ids = client.loans.iterate({
      items: (body) => (Array.isArray(body) ? body.map((loan) => String(loan.id)) : []),
    });
    expectTypeOf(ids).toEqualTypeOf<AsyncGenerator<string, void, undefined>>();
    expectTypeOf(client.loans.pages()).toEqualTypeOf<AsyncGenerator<Page<Loan>, void, undefined>>();
    // @ts-expect-error pageSize is a number
    client.loans.iterate({ pageSize: '10' });
  });
});

describe('per-call options', () => {
  it('go last on every resource method, and may stand beside the paging options', () => {
    expectTypeOf(client.loans.list({ limit: 5 }, { timeoutMs: 1000 })).resolves.toEqualTypeOf<Page<Loan>>();
    expectTypeOf(client.loans.list({ limit: 5, timeoutMs: 1000 })).resolves.toEqualTypeOf<Page<Loan>>();
    client.loans.iterate({ pageSize: 10 }, { signal: AbortSignal.timeout(1000) });
    client.loans.pages({}, { maxRetries: 0, partnerId: 'p2' });
    client.repayments.create({}, { timeoutMs: 1000 });
    // @ts-expect-error limit is a paging option, not a per-call one
    client.loans.list({}, { limit: 5 });
  });
});
