import { describe, expect, it } from 'vitest';
import { raceSignal, realSleep } from '../src/clock.js';

describe('realSleep', () => {
  it('resolves after the delay and rejects with the abort reason', async () => {
    await expect(realSleep(1)).resolves.toBeUndefined();
    const controller = new AbortController();
    const waiting = realSleep(60_000, controller.signal);
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
    await expect(realSleep(1, AbortSignal.abort(new Error('already')))).rejects.toThrow('already');
  });
});

describe('raceSignal', () => {
  it('passes results and errors through, and rejects early on abort', async () => {
    await expect(raceSignal(Promise.resolve(1), undefined)).resolves.toBe(1);
    await expect(raceSignal(Promise.resolve(2), new AbortController().signal)).resolves.toBe(2);
    await expect(raceSignal(Promise.reject(new Error('e')), new AbortController().signal)).rejects.toThrow(
      'e',
    );
    const controller = new AbortController();
    const never = new Promise<number>(() => {});
    const raced = raceSignal(never, controller.signal);
    controller.abort(new Error('gave up'));
    await expect(raced).rejects.toThrow('gave up');
  });

  it('with a signal aborted already, leaves no unhandled rejection of the work behind', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const work = new Promise<number>((_, reject) => setTimeout(() => reject(new Error('work failed')), 5));
      await expect(raceSignal(work, AbortSignal.abort(new Error('gave up')))).rejects.toThrow('gave up');
      await new Promise((r) => setTimeout(r, 30));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
