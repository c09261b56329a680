import type { ChildProcess } from 'node:child_process';

export function freePort(): Promise<number>;
export function launchRedis(
  args: string[],
  marker?: RegExp,
): {
  child: ChildProcess;
  ready: Promise<void>;
  exited: Promise<{ code: number | null; signal: string | null }>;
};
export function pollCommand(port: number, args: string[], timeoutMs?: number): Promise<unknown>;
export function stopPolling(ports: number[]): void;
