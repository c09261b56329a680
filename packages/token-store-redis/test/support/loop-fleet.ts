import { fileURLToPath } from 'node:url';
import { startWorker, type Worker } from './fleet.js';

const worker = fileURLToPath(new URL('./loop-worker.mjs', import.meta.url));

export interface LoopJob {
  redisUrl: string;
  tokenUrl: string;
  audience: string;
  clientId: string;
  clientSecret: string;
  durationMs: number;
  intervalMs?: number;
  encryptionKey?: string;
  commandTimeoutMs?: number;
  /** Passed to getToken({ timeoutMs }). */
  timeoutMs?: number;
}

export interface LoopResult {
  calls: number;
  failed: number;
  errors: Record<string, number>;
  maxWaitMs: number;
  slowCalls: number;
  /** Tokens resolved with expiresAt ≤ the clock at that moment. */
  expired: number;
  /** Tokens resolved whose JWT exp had passed at that moment. */
  expiredByExp: number;
  tokensPerSecond: number[];
  storeEvents: Record<string, number>;
  providerEvents: Record<string, number>;
}

export type LoopWorker = Worker<LoopResult>;

/** Starts a loop worker and resolves once it is READY (its store connected); `go()` releases it. */
export function startLoopWorker(job: LoopJob): Promise<LoopWorker> {
  return startWorker<LoopResult>(job, worker);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
