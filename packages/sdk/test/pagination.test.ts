import { describe, expect, it } from 'vitest';
import { ResponseShapeError } from '../src/errors.js';
import { paginate, selectItems } from '../src/pagination.js';

describe('selectItems', () => {
  it('takes the body when it is an array, else its only array-valued property', () => {
    expect(selectItems([{ id: 1 }])).toEqual([{ id: 1 }]);
    expect(selectItems({ total: 2, loans: [{ id: 1 }, { id: 2 }], next: null })).toEqual([
      { id: 1 },
      { id: 2 },
    ]);
  });

  it('uses the selector given: a property name or a function', () => {
    const body = { data: [1, 2], errors: [] };
    expect(selectItems(body, 'data')).toEqual([1, 2]);
    expect(selectItems(body, (b: typeof body) => b.data)).toEqual([1, 2]);
  });

  it('asks for the selector when it cannot tell where the items are', () => {
    expect(() => selectItems({ data: [1], errors: [] })).toThrow(
      new ResponseShapeError(
        'Cannot tell where the items of the page are: the body is an object with several array-valued properties ("data", "errors"). Pass the items selector, e.g. { items: \'loans\' } or { items: (body) => body.loans }.',
      ),
    );
    expect(() => selectItems({ total: 0 })).toThrow(
      'Cannot tell where the items of the page are: the body is an object with no array-valued property. Pass the items selector',
    );
    expect(() => selectItems('text')).toThrow(
      'Cannot tell where the items of the page are: the body is a string. Pass the items selector, e.g. { items: (body) => body.loans }.',
    );
    expect(() => selectItems({ data: 1 }, 'data')).toThrow(
      'The page has no array at "data" (it is an object with properties "data"). Pass the name of the property that holds the items, or a function.',
    );
    expect(() => selectItems({}, () => 'x' as never)).toThrow(
      'The items selector returned a string, not an array. Return the array of items of the page.',
    );
  });
});

describe('paginate', () => {
  /** A list of `total` items served as JSON pages, capped at `cap` per page, with or without X-Total-Count. */
  const source = (total: number, options: { wrap?: boolean; cap?: number; announce?: boolean } = {}) => {
    const asked: { limit: number; offset: number }[] = [];
    const fetchPage = async (query: { limit: number; offset: number }) => {
      asked.push(query);
      const size = Math.min(query.limit, options.cap ?? Number.POSITIVE_INFINITY);
      const items = Array.from({ length: Math.max(0, Math.min(size, total - query.offset)) }, (_, i) => ({
        id: query.offset + i,
      }));
      const data = options.wrap ? { items, total } : items;
      const headers: Record<string, string> = options.announce ? { 'x-total-count': String(total) } : {};
      return { data, response: new Response(JSON.stringify(data), { headers }) };
    };
    return { asked, fetchPage };
  };
  const collect = async <T>(pages: AsyncIterable<T>) => {
    const out: T[] = [];
    for await (const page of pages) out.push(page);
    return out;
  };

  it('advances the offset by the items received: a server capping pages at 10 loses nothing', async () => {
    const { asked, fetchPage } = source(30, { cap: 10 });
    const pages = await collect(paginate({ fetchPage, pageSize: 25 }));
    expect(pages.flatMap((page) => page.items)).toEqual(Array.from({ length: 30 }, (_, id) => ({ id })));
    expect(asked.map((query) => query.offset)).toEqual([0, 10, 20, 30]);
  });

  it('stops on the announced total (X-Total-Count) without the extra empty request', async () => {
    const { asked, fetchPage } = source(30, { cap: 10, announce: true });
    const pages = await collect(paginate({ fetchPage, pageSize: 25 }));
    expect(pages.map((page) => [page.offset, page.items.length, page.total, page.nextOffset])).toEqual([
      [0, 10, 30, 10],
      [10, 10, 30, 20],
      [20, 10, 30, undefined],
    ]);
    expect(asked).toHaveLength(3);
  });

  it('without a total, a short page is not the end: only an empty page is', async () => {
    const { asked, fetchPage } = source(7);
    const pages = await collect(paginate({ fetchPage, pageSize: 3 }));
    expect(pages.map((page) => page.items.length)).toEqual([3, 3, 1]);
    expect(pages.map((page) => page.offset)).toEqual([0, 3, 6]);
    expect(asked.map((query) => query.offset)).toEqual([0, 3, 6, 7]);
  });

  it('finds the items in a wrapped body', async () => {
    const { fetchPage } = source(6, { wrap: true });
    const pages = await collect(paginate({ fetchPage, pageSize: 3 }));
    expect(pages.flatMap((page) => page.items)).toEqual([0, 1, 2, 3, 4, 5].map((id) => ({ id })));
  });

  it('yields nothing for an empty result, after one request', async () => {
    const { asked, fetchPage } = source(0);
    expect(await collect(paginate({ fetchPage, pageSize: 3 }))).toEqual([]);
    expect(asked).toHaveLength(1);
  });

  it('starts at the offset given and asks for nothing more when stopped early', async () => {
    const { asked, fetchPage } = source(100);
    for await (const page of paginate({ fetchPage, pageSize: 10, offset: 40 })) {
      expect(page.offset).toBe(40);
      break;
    }
    expect(asked).toEqual([{ limit: 10, offset: 40 }]);
  });
});
