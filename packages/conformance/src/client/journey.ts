import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, readdirSync, readFileSync, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import { usageError } from '../errors.js';
import type { JourneyRecord } from './session.js';

/** How long a journey gets after SIGTERM before its process group is killed. */
export const killGraceMs = 2000;

function executable(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Finds COMMAND as the shell would (a path, or a name on PATH) and checks that it can be run, so that
 * a typo is a usage error (exit 2) before the stage starts, not a journey that "failed".
 */
export function resolveCommand(
  command: string,
  env: Record<string, string | undefined>,
  cwd = process.cwd(),
): string {
  if (command.length === 0)
    throw usageError('the journey command is empty; write it after --, e.g. -- node journey.mjs');
  if (command.includes('/')) {
    const path = isAbsolute(command) ? command : resolve(cwd, command);
    if (!executable(path))
      throw usageError(
        `the journey command ${JSON.stringify(command)} is not an executable file; check the path and its execute permission (chmod +x), or run it through its interpreter (-- sh ${command})`,
      );
    return path;
  }
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir.length === 0) continue;
    const path = join(dir, command);
    if (executable(path)) return path;
  }
  throw usageError(
    `the journey command ${JSON.stringify(command)} was not found on PATH; install it, or give its path (-- ./journey.sh)`,
  );
}

export interface JourneyOptions {
  command: readonly string[];
  env: Record<string, string | undefined>;
  /** Longest the journey may run, in ms; then its whole process group is stopped. */
  timeoutMs: number;
  /** Aborting (Ctrl-C) stops the journey's process group; the run still judges what was seen. */
  signal?: AbortSignal;
  /** Where the journey's output goes. Default: inherited (the partner sees their program's output). */
  stdio?: 'inherit' | 'ignore' | 'pipe';
  onOutput?: (chunk: Buffer) => void;
}

/** The variable that marks every process of a journey (inherited by its children, whatever group they join). */
export const journeyMarker = 'PARTNER_CONFORMANCE_JOURNEY';

/**
 * Processes still carrying this journey's marker in their environment: children that left its process
 * group (setsid, a daemon) and outlived it. Linux only (/proc); elsewhere, and for a child that cleared
 * its environment, none is found.
 */
function markedProcesses(marker: string, group: number | undefined): Array<{ pid: number; command: string }> {
  const found: Array<{ pid: number; command: string }> = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return found;
  }
  const wanted = `${journeyMarker}=${marker}`;
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const environ = readFileSync(`/proc/${entry}/environ`, 'latin1').split('\0');
      if (!environ.includes(wanted)) continue;
      // Still in the journey's group: the group's SIGKILL is on its way to it.
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
      if (pgrp === group) continue;
      const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
      found.push({ pid: Number(entry), command: command.slice(0, 200) });
    } catch {
      // gone meanwhile, or not ours to read
    }
    if (found.length >= 64) break;
  }
  return found;
}

/** Runs the journey in its own process group and tells how it ended. */
export function runJourney(options: JourneyOptions): Promise<JourneyRecord> {
  const started = performance.now();
  const [command, ...args] = options.command;
  return new Promise((resolveRecord) => {
    let ending: JourneyRecord['ending'] = 'exited';
    let note: string | undefined;
    const marker = randomBytes(12).toString('hex');
    const child = spawn(command!, args, {
      env: { ...options.env, [journeyMarker]: marker } as NodeJS.ProcessEnv,
      stdio: options.stdio === 'pipe' ? ['ignore', 'pipe', 'pipe'] : (options.stdio ?? 'inherit'),
      detached: true,
    });
    if (options.stdio === 'pipe') {
      child.stdout?.on('data', (chunk: Buffer) => options.onOutput?.(chunk));
      child.stderr?.on('data', (chunk: Buffer) => options.onOutput?.(chunk));
    }
    let killTimer: NodeJS.Timeout | undefined;
    const stopGroup = () => {
      const pid = child.pid;
      if (pid === undefined) return;
      try {
        process.kill(-pid, 'SIGTERM');
      } catch {}
      killTimer = setTimeout(() => {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {}
      }, killGraceMs);
      killTimer.unref();
    };
    const timer = setTimeout(() => {
      ending = 'timeout';
      note = `the journey ran past --timeout (${Math.round(options.timeoutMs / 1000)} s); its process group was stopped`;
      stopGroup();
    }, options.timeoutMs);
    const onAbort = () => {
      if (ending !== 'exited') return;
      ending = 'interrupted';
      note = 'interrupted (Ctrl-C); the journey was stopped and what the stage saw was judged';
      stopGroup();
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.signal?.aborted) onAbort();
    let settled = false;
    const finish = (exitCode: number | null, signal: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      // The group may hold children that outlived the journey's main process: stop them too.
      if (child.pid !== undefined)
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {}
      if (killTimer) clearTimeout(killTimer);
      // Children that left the group are found by the marker they inherited, named, and stopped.
      const survivors = markedProcesses(marker, child.pid);
      for (const survivor of survivors)
        try {
          process.kill(survivor.pid, 'SIGKILL');
        } catch {}
      resolveRecord({
        command: [...options.command],
        exitCode,
        signal,
        durationMs: Math.round(performance.now() - started),
        ending,
        ...(note !== undefined && { note }),
        ...(survivors.length > 0 && {
          survivors: survivors.map((survivor) => `pid ${survivor.pid}: ${survivor.command}`),
        }),
      });
    };
    child.once('error', (error) => {
      ending = 'spawn-failed';
      note = `the journey could not be started: ${error.message}`;
      finish(null, null);
    });
    child.once('exit', (code, signal) => finish(code, signal));
  });
}
