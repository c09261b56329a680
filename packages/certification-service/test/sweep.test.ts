import { describe, expect, it } from 'vitest';
import { startSweep } from '../src/db/sweep.js';

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('startSweep: a periodic sweep on one instance', () => {
  it('sweeps at start and every interval, never two at once, and stop waits for the one under way', async () => {
    let runs = 0;
    let running = 0;
    let most = 0;
    let release!: () => void;
    const stop = startSweep(
      async () => {
        runs += 1;
        running += 1;
        most = Math.max(most, running);
        // The first sweep outlasts several intervals.
        if (runs === 1) await new Promise<void>((resolve) => (release = resolve));
        running -= 1;
      },
      { everyMs: 10, failed: () => undefined },
    );
    await tick(60);
    expect(runs).toBe(1);
    release();
    await tick(60);
    expect(runs).toBeGreaterThan(1);
    expect(most).toBe(1);
    const stopped = runs;
    await stop();
    await tick(40);
    expect(runs).toBe(stopped);
  });

  it('hands a failed sweep to failed and keeps sweeping', async () => {
    const failures: string[] = [];
    let runs = 0;
    const stop = startSweep(
      async () => {
        runs += 1;
        if (runs === 1) throw new Error('the database went away');
      },
      { everyMs: 10, failed: (error) => failures.push((error as Error).message) },
    );
    await tick(50);
    await stop();
    expect(failures).toEqual(['the database went away']);
    expect(runs).toBeGreaterThan(1);
  });

  it('stopped before its first sweep, it never sweeps (control: a sweep would count)', async () => {
    let runs = 0;
    const sweep = async () => {
      runs += 1;
    };
    await startSweep(sweep, { everyMs: 10, failed: () => undefined })();
    await tick(30);
    expect(runs).toBe(0);
  });
});
