import type { ApiOperationId } from '@partner-lending/spec';
import type {
  APIPromise,
  CreateResource,
  IterateLoansOptions,
  ListLoansOptions,
  Loan,
  LoansResource,
  RequestOptions,
} from './client-types.js';
import { checkCallOptions } from './options.js';
import { type Page, pageOf, paginate } from './pagination.js';

const DEFAULT_PAGE_SIZE = 25;

/** Calls one operation of the spec; resolves with the parsed body and the answer, or throws. */
export type CallOperation = (
  id: ApiOperationId,
  request: { query?: object; body?: object },
  opts: RequestOptions,
) => Promise<{ data: unknown; response: Response }>;

/** The resource methods (loans, and the three creates) over one way to call an operation. */
export function resources(call: CallOperation) {
  const apiPromise = <T>(inner: Promise<{ data: unknown; response: Response }>): APIPromise<T> => {
    const promise = inner.then(({ data }) => data as T) as APIPromise<T>;
    // Either form may be the only one awaited: neither leaves an unhandled rejection behind.
    promise.catch(() => {});
    promise.withResponse = () =>
      inner.then(({ data, response }) => ({
        data: data as T,
        status: response.status,
        headers: response.headers,
        response,
      }));
    return promise;
  };

  const fetchPage = (query: { limit?: number; offset?: number }, opts: RequestOptions) =>
    call('listLoans', { query }, opts);

  const loans: LoansResource = {
    list: <Item = Loan>(
      { limit, offset, items, ...inline }: ListLoansOptions<Item> = {},
      last: RequestOptions = {},
    ) => {
      const opts = { ...inline, ...last };
      const query = {
        ...(limit === undefined ? {} : { limit }),
        ...(offset === undefined ? {} : { offset }),
      };
      // Bad options reject the promise (as every failure of a call does) rather than throw.
      const inner = (async () => {
        checkCallOptions({ limit, offset });
        return fetchPage(query, opts);
      })().then(({ data, response }) => ({
        data: pageOf<Item>(data, response, { offset: offset ?? 0, limit, items }),
        response,
      }));
      return apiPromise<Page<Item>>(inner);
    },
    pages: <Item = Loan>(
      { pageSize = DEFAULT_PAGE_SIZE, offset, items, ...inline }: IterateLoansOptions<Item> = {},
      last: RequestOptions = {},
    ) => {
      const opts = { ...inline, ...last };
      checkCallOptions({ ...opts, pageSize, offset });
      return paginate<Item>({
        pageSize,
        offset,
        items,
        fetchPage: (query) => fetchPage(query, opts),
      });
    },
    iterate: async function* <Item = Loan>(
      iterateOptions: IterateLoansOptions<Item> = {},
      last: RequestOptions = {},
    ) {
      for await (const page of loans.pages(iterateOptions, last)) yield* page.items;
    },
  };
  const creator = <Input, Output>(id: ApiOperationId): CreateResource<Input, Output> => ({
    create: (body, opts = {}) => apiPromise<Output>(call(id, { body: body as object }, opts)),
  });
  return { loans, creator };
}
