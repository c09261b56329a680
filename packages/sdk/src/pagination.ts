import { ResponseShapeError } from './errors.js';

/**
 * Where the items of a page are: a property name, or a function of the parsed body. The default finds
 * them when the body is an array, or an object with exactly one array-valued property.
 */
export type ItemsSelector<Body = unknown, Item = unknown> = string | ((body: Body) => readonly Item[]);

/** The items of one page, found with `selector` (or the default rule). */
export function selectItems<Item = unknown>(body: unknown, selector?: ItemsSelector<never, Item>): Item[] {
  if (typeof selector === 'function') {
    const items = (selector as (body: unknown) => readonly Item[])(body);
    if (!Array.isArray(items)) {
      throw new ResponseShapeError(
        `The items selector returned ${describe(items)}, not an array. Return the array of items of the page.`,
      );
    }
    return [...items];
  }
  if (typeof selector === 'string') {
    const items = isObject(body) ? body[selector] : undefined;
    if (!Array.isArray(items)) {
      throw new ResponseShapeError(
        `The page has no array at "${selector}" (it is ${describe(body)}${isObject(body) ? ` with properties ${names(Object.keys(body))}` : ''}). Pass the name of the property that holds the items, or a function.`,
      );
    }
    return [...(items as Item[])];
  }
  if (Array.isArray(body)) return [...(body as Item[])];
  if (isObject(body)) {
    const arrays = Object.keys(body).filter((key) => Array.isArray(body[key]));
    if (arrays.length === 1) return [...(body[arrays[0]!] as Item[])];
    throw new ResponseShapeError(
      `Cannot tell where the items of the page are: the body is an object with ${arrays.length === 0 ? 'no array-valued property' : `several array-valued properties (${names(arrays)})`}. Pass the items selector, e.g. { items: 'loans' } or { items: (body) => body.loans }.`,
    );
  }
  throw new ResponseShapeError(
    `Cannot tell where the items of the page are: the body is ${describe(body)}. Pass the items selector, e.g. { items: (body) => body.loans }.`,
  );
}

/** One page of a list: its items and where it sits. The same type from `list()`, `pages()` and `iterate()`. */
export interface Page<Item> {
  /** The items of this page. */
  items: Item[];
  /** The offset this page was asked for. */
  offset: number;
  /** The page size asked for (`limit`), when one was. The server may send fewer. */
  limit: number | undefined;
  /** All items on the server (`X-Total-Count`), when it says. */
  total: number | undefined;
  /** Where the next page starts (offset + items received); undefined when this page is the last. */
  nextOffset: number | undefined;
  /** The parsed body, as the server sent it. */
  body: unknown;
  /** The HTTP answer (status, headers). */
  response: Response;
}

/** `X-Total-Count` when it is a whole number, else undefined. */
export function totalOf(response: Response): number | undefined {
  const header = response.headers.get('x-total-count');
  if (header === null || !/^\d+$/.test(header.trim())) return undefined;
  return Number(header.trim());
}

/** Builds the page of a list answer. */
export function pageOf<Item>(
  body: unknown,
  response: Response,
  at: { offset: number; limit: number | undefined; items?: ItemsSelector<never, Item> | undefined },
): Page<Item> {
  const items = selectItems<Item>(body, at.items as ItemsSelector<never, Item> | undefined);
  const total = totalOf(response);
  const next = at.offset + items.length;
  const last = items.length === 0 || (total !== undefined && next >= total);
  return {
    items,
    offset: at.offset,
    limit: at.limit,
    total,
    nextOffset: last ? undefined : next,
    body,
    response,
  };
}

export interface PaginateOptions<Item> {
  fetchPage: (query: { limit: number; offset: number }) => Promise<{ data: unknown; response: Response }>;
  pageSize: number;
  offset?: number | undefined;
  // biome-ignore lint/suspicious/noExplicitAny: the selector is typed against the body by the caller.
  items?: ItemsSelector<any, Item> | undefined;
}

/**
 * Pages by limit/offset. The offset advances by the items received (a server may cap its pages below
 * the size asked for: a short page is not the end), and paging stops on an empty page or once the
 * total the server announces (`X-Total-Count`) is reached. Nothing is skipped, whatever the cap.
 */
export async function* paginate<Item>(
  options: PaginateOptions<Item>,
): AsyncGenerator<Page<Item>, void, undefined> {
  const limit = options.pageSize;
  let offset = options.offset ?? 0;
  for (;;) {
    const { data, response } = await options.fetchPage({ limit, offset });
    const page = pageOf<Item>(data, response, {
      offset,
      limit,
      items: options.items as ItemsSelector<never, Item> | undefined,
    });
    if (page.items.length > 0) yield page;
    if (page.nextOffset === undefined) return;
    offset = page.nextOffset;
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const names = (keys: string[]) => (keys.length ? keys.map((key) => `"${key}"`).join(', ') : 'none');

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}
