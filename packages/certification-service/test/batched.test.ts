import { describe, expect, it } from 'vitest';
import { batched } from '../src/db/batched.js';

/** A statement that takes `ms`, and remembers the batches it was given. */
function recorder(ms = 5) {
  const batches: number[][] = [];
  const run = async (items: readonly number[]) => {
    batches.push([...items]);
    await new Promise((resolve) => setTimeout(resolve, ms));
    return items.map((item) => item * 10);
  };
  return { batches, run };
}

describe('batched (group commit)', () => {
  it('sends a lone item at once, alone, and gives each caller its own result', async () => {
    const { batches, run } = recorder();
    const call = batched(run, { maxItems: 10 });
    expect(await call(1)).toBe(10);
    expect(await call(2)).toBe(20);
    expect(batches).toEqual([[1], [2]]);
  });

  it('groups the items that arrive in one turn, and those queued while a batch is in flight', async () => {
    const { batches, run } = recorder();
    const call = batched(run, { maxItems: 10 });
    const first = [call(1), call(2)];
    // Queued after the first batch left: they wait for it, then go out together.
    await new Promise((resolve) => setTimeout(resolve, 1));
    const second = [call(3), call(4), call(5)];
    expect(await Promise.all([...first, ...second])).toEqual([10, 20, 30, 40, 50]);
    expect(batches).toEqual([
      [1, 2],
      [3, 4, 5],
    ]);
  });

  it('lets one turn of the event loop pass after a batch: what arrives then goes with the items queued during it', async () => {
    const batches: number[][] = [];
    let call: (item: number) => Promise<number>;
    const pending: Promise<number>[] = [];
    call = batched(
      async (items: readonly number[]) => {
        batches.push([...items]);
        if (items[0] === 1) {
          // While the first statement runs, 3 is queued; 2 is read in the turn right after it ends.
          setTimeout(() => pending.push(call(3)), 1);
          await new Promise<void>((resolve) =>
            setTimeout(() => {
              setImmediate(() => pending.push(call(2)));
              resolve();
            }, 10),
          );
        }
        return items.map((item) => item * 10);
      },
      { maxItems: 10 },
    );
    expect(await call(1)).toBe(10);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await Promise.all(pending)).toEqual([30, 20]);
    // Sent at once after the first, 3 would have gone alone and 2 in a third statement.
    expect(batches).toEqual([[1], [3, 2]]);
  });

  it('bounds a batch by items and by weight (an item heavier than the bound goes alone)', async () => {
    const { batches, run } = recorder(1);
    const byCount = batched(run, { maxItems: 2 });
    await Promise.all([1, 2, 3, 4, 5].map(byCount));
    expect(batches).toEqual([[1, 2], [3, 4], [5]]);
    batches.length = 0;
    const byWeight = batched(run, { maxItems: 10, maxWeight: 10, weigh: (item) => item });
    await Promise.all([4, 5, 20, 3].map(byWeight));
    expect(batches).toEqual([[4, 5], [20], [3]]);
  });

  it('rejects every caller of a failed batch with its error, and goes on with the next', async () => {
    let calls = 0;
    const call = batched(
      async (items: readonly number[]) => {
        calls += 1;
        await new Promise((resolve) => setTimeout(resolve, 2));
        if (calls === 1) throw new Error('the database is gone');
        return items;
      },
      { maxItems: 10 },
    );
    const failed = [call(1), call(2)].map((promise) => promise.catch((error: Error) => error.message));
    await new Promise((resolve) => setTimeout(resolve, 1));
    const later = call(3);
    expect(await Promise.all(failed)).toEqual(['the database is gone', 'the database is gone']);
    expect(await later).toBe(3);
  });

  it("sends each item again alone when the error may be one item's, so one bad item fails no other", async () => {
    const batches: number[][] = [];
    const call = batched(
      async (items: readonly number[]) => {
        batches.push([...items]);
        if (items.includes(13)) throw Object.assign(new Error('bad data'), { code: '22P05' });
        return items;
      },
      { maxItems: 10, alone: (error) => (error as { code?: string }).code === '22P05' },
    );
    const settled = await Promise.allSettled([call(12), call(13), call(14)]);
    expect(settled.map((item) => (item.status === 'fulfilled' ? item.value : 'rejected'))).toEqual([
      12,
      'rejected',
      14,
    ]);
    expect(batches).toEqual([[12, 13, 14], [12], [13], [14]]);
    // Any other error (the database is gone) is every caller's, with no retries.
    batches.length = 0;
    const down = batched(
      async (items: readonly number[]) => {
        batches.push([...items]);
        throw new Error('connection refused');
      },
      { maxItems: 10, alone: () => false },
    );
    expect((await Promise.allSettled([down(1), down(2)])).map((item) => item.status)).toEqual([
      'rejected',
      'rejected',
    ]);
    expect(batches).toEqual([[1, 2]]);
  });

  it('refuses a batch whose results do not match its items, rather than give a caller another one', async () => {
    const call = batched(async (items: readonly number[]) => items.slice(1), { maxItems: 10 });
    await expect(Promise.all([call(1), call(2)])).rejects.toThrow('a batch of 2 gave 1 results');
  });

  /**
   * A statement the test ends by hand: the batches it was given, those still running, the most at once,
   * and `finish(i)` to commit the i-th batch.
   */
  function gated() {
    const batches: number[][] = [];
    const ends: (() => void)[] = [];
    const state = { running: 0, most: 0 };
    const run = async (items: readonly number[]) => {
      batches.push([...items]);
      state.running += 1;
      state.most = Math.max(state.most, state.running);
      await new Promise<void>((resolve) => ends.push(resolve));
      state.running -= 1;
      return items.map((item) => item * 10);
    };
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    return { batches, state, run, turn, finish: (index: number) => ends[index]!() };
  }

  it('with inFlight 2, sends what is queued during a commit at once, and answers each caller after its own batch only', async () => {
    const { batches, state, run, turn, finish } = gated();
    const call = batched(run, { maxItems: 10, inFlight: 2 });
    const settled: number[] = [];
    const track = (promise: Promise<number>) => promise.then((value) => settled.push(value));
    const first = track(call(1));
    await turn();
    await turn();
    // The first batch is waiting for its commit: 2 and 3 go out together beside it, not after it.
    const rest = [track(call(2)), track(call(3))];
    await turn();
    await turn();
    expect(batches).toEqual([[1], [2, 3]]);
    expect(state.running).toBe(2);
    // A third batch waits for a slot: two at most in flight.
    const fourth = track(call(4));
    await turn();
    await turn();
    expect(batches).toHaveLength(2);
    // The second batch commits first: its callers are answered, the first batch's caller is not.
    finish(1);
    await Promise.all(rest);
    expect(settled).toEqual([20, 30]);
    await turn();
    await turn();
    expect(batches).toEqual([[1], [2, 3], [4]]);
    finish(0);
    await first;
    finish(2);
    await fourth;
    expect(settled).toEqual([20, 30, 10, 40]);
    expect(state.most).toBe(2);
  });

  it('negative control: with the default inFlight (1), what is queued during a commit waits for it', async () => {
    const { batches, state, run, turn, finish } = gated();
    const call = batched(run, { maxItems: 10 });
    const first = call(1);
    await turn();
    await turn();
    const rest = [call(2), call(3)];
    await turn();
    await turn();
    expect(batches).toEqual([[1]]);
    finish(0);
    expect(await first).toBe(10);
    await turn();
    await turn();
    expect(batches).toEqual([[1], [2, 3]]);
    finish(1);
    expect(await Promise.all(rest)).toEqual([20, 30]);
    expect(state.most).toBe(1);
  });
});
