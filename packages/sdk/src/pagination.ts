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

export interface Page<Body = unknown, Item = unknown> {
  /** The items of this page. */
  items: Item[];
  /** The parsed body of the page. */
  body: Body;
  /** The offset this page was asked for. */
  offset: number;
  /** The page size asked for (`limit`). */
  limit: number;
}

export interface PaginateOptions<Body, Item> {
  fetchPage: (query: { limit: number; offset: number }) => Promise<Body>;
  pageSize: number;
  offset?: number | undefined;
  items?: ItemsSelector<Body, Item> | undefined;
}

/**
 * Pages by limit/offset: offset advances by the page size; stops after a short or empty page (so a
 * total that is an exact multiple of the page size costs one extra, empty, request).
 */
export async function* paginate<Body, Item>(
  options: PaginateOptions<Body, Item>,
): AsyncGenerator<Page<Body, Item>> {
  const limit = options.pageSize;
  for (let offset = options.offset ?? 0; ; offset += limit) {
    const body = await options.fetchPage({ limit, offset });
    const items = selectItems<Item>(body, options.items as ItemsSelector<never, Item> | undefined);
    if (items.length > 0) yield { items, body, offset, limit };
    if (items.length < limit) return;
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
