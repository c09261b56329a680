import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The real command in a child process, signalled as a terminal or a CI runner would signal it.
const bin = fileURLToPath(new URL('../../bin/partner-conformance.js', import.meta.url));

/** Running (a killed process that nobody has reaped yet is a zombie, not alive). */
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  let stat = '';
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  return !/^\d+ \(.*\) Z/.test(stat);
};

/** A journey that starts a child in a session of its own (it leaves the process group), then waits. */
async function journeyWithRunaway(dir: string): Promise<string> {
  const script = join(dir, 'journey.sh');
  await writeFile(
    script,
    `#!/bin/sh\nsetsid sleep 300 < /dev/null > /dev/null 2>&1 &\necho $! > ${join(dir, 'runaway.pid')}\nwhile true; do sleep 0.2; done\n`,
  );
  await chmod(script, 0o755);
  return script;
}

async function runUntilSignalled(signals: NodeJS.Signals[]) {
  const dir = await mkdtemp(join(tmpdir(), 'signals-'));
  const script = await journeyWithRunaway(dir);
  const report = join(dir, 'r.json');
  const child = spawn(
    process.execPath,
    [bin, 'client', '--no-faults', '--report-json', report, '--', script],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const exited = new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)));
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  // Wait for the runaway child to exist, then signal (a second signal within the kill grace).
  for (let i = 0; i < 100; i++) {
    if (await readFile(join(dir, 'runaway.pid'), 'utf8').catch(() => '')) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const runaway = Number(await readFile(join(dir, 'runaway.pid'), 'utf8'));
  // The shell writes the pid as soon as it has forked: the child has left the group (setsid) only once
  // it runs `sleep 300` (setsid execs it after leaving). On a busy machine that can take a while.
  const running = () => readFile(`/proc/${runaway}/cmdline`, 'utf8').catch(() => '');
  for (let i = 0; i < 100 && (await running()) !== 'sleep\u0000300\u0000'; i++)
    await new Promise((resolve) => setTimeout(resolve, 50));
  expect(await running()).toBe('sleep\u0000300\u0000');
  expect(alive(runaway)).toBe(true);
  for (const signal of signals) {
    child.kill(signal);
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
  const code = await exited;
  return { code, output, report: JSON.parse(await readFile(report, 'utf8')), runaway };
}

describe('signals and processes', () => {
  it('two Ctrl-C within the grace: the report is written, the journey stopped, the runaway child named and stopped', async () => {
    const { code, report, runaway } = await runUntilSignalled(['SIGINT', 'SIGINT']);
    expect(code).toBe(0);
    expect(report.journey.ending).toBe('interrupted');
    expect(report.journey.survivors).toEqual([
      expect.stringMatching(new RegExp(`^pid ${runaway}: sleep 300$`)),
    ]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(alive(runaway)).toBe(false);
  }, 30_000);

  it('SIGHUP (the terminal closed) and SIGTERM write the report too', async () => {
    for (const signal of ['SIGHUP', 'SIGTERM'] as const) {
      const { report, runaway } = await runUntilSignalled([signal]);
      expect(report.journey.ending, signal).toBe('interrupted');
      expect(alive(runaway), signal).toBe(false);
    }
  }, 30_000);
});
