import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';
import { bin } from './support/service.js';

// `serve`'s signals are set once the instance is ready, after its start-up warm-up. A SIGTERM during
// the warm-up used to end the process at once, leaving the warm-up's throwaway partner and run in the
// store until a later start deleted them. On PostgreSQL, so that the test can watch the store while
// `serve` holds it and signal while the warm-up's partner exists.

let postgres: ThrowawayPostgres;
const dir = mkdtempSync(join(tmpdir(), 'pcs-warmup-signal-'));
beforeAll(async () => {
  postgres = await startPostgres();
});
afterAll(async () => {
  await postgres?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const leftovers = `SELECT
  (SELECT count(*) FROM partners WHERE api_key_hash LIKE 'warm-up:%')::int AS partners,
  (SELECT count(*) FROM runs)::int AS runs`;

/** `serve` on a fresh database, signalled with `signal` as soon as its warm-up's partner is in the store. */
async function signalDuringWarmUp(signal: NodeJS.Signals) {
  const url = await postgres.database(`warmup_${signal.toLowerCase()}_${Date.now()}`);
  const child = spawn(process.execPath, [bin, 'serve', '--port', '0'], {
    cwd: dir,
    env: { ...process.env, DATABASE_URL: url, SIGNING_KEY_FILE: '', SECRETS_KEY_FILE: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const count = async () =>
      (await client.query<{ partners: number; runs: number }>(leftovers).catch(() => undefined))?.rows[0];
    const deadline = Date.now() + 60_000;
    let seen = await count();
    while (!seen?.partners) {
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`the warm-up's partner never appeared:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
      seen = await count();
    }
    // Still warming up: serve has not said it listens (it does once ready).
    expect(output).not.toMatch(/listening on/);
    child.kill(signal);
    const code = await Promise.race([
      exited,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`serve did not exit within 30 s:\n${output}`)), 30_000),
      ),
    ]);
    return { code, output, left: (await count())! };
  } finally {
    await client.end();
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

describe("a signal during serve's start-up warm-up", () => {
  it('SIGTERM stops the warm-up, deletes its throwaway partner and run, and exits 0', async () => {
    const { code, output, left } = await signalDuringWarmUp('SIGTERM');
    expect(code).toBe(0);
    // Stopped half-way, not finished before the signal: the stop path is what ran.
    expect(output).toContain('warm-up stopped after');
    expect(output).toContain('SIGTERM: stopping');
    expect(output).not.toMatch(/listening on/);
    expect(left).toEqual({ partners: 0, runs: 0 });
  });

  it('(control) SIGKILL at the same moment leaves the partner behind: the check above sees leftovers', async () => {
    const { code, left } = await signalDuringWarmUp('SIGKILL');
    expect(code).toBeNull();
    expect(left.partners).toBe(1);
  });
});
