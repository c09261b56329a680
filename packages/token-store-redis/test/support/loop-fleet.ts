import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

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

export interface LoopWorker {
  go(): void;
  kill(): void;
  result(): Promise<LoopResult>;
}

/** Starts a loop worker and resolves once it is READY (its store connected). */
export function startLoopWorker(job: LoopJob): Promise<LoopWorker> {
  const child = spawn(process.execPath, [worker], {
    env: { ...process.env, FLEET_JOB: JSON.stringify(job), NODE_NO_WARNINGS: '1' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`loop worker not READY in 20 s: ${out} ${err}`)), 20_000);
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('READY\n')) {
        clearTimeout(timer);
        resolve({
          go: () => child.stdin.write('go\n'),
          kill: () => child.kill('SIGKILL'),
          result: async () => {
            const code = await exited;
            const last = out.trim().split('\n').pop() ?? '';
            if (code !== 0 || !last.startsWith('{')) {
              throw new Error(`loop worker failed (exit ${code}); stdout: ${out} stderr: ${err}`);
            }
            return JSON.parse(last) as LoopResult;
          },
        });
      }
    });
    exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`loop worker exited (${code}) before READY: ${out} ${err}`));
    });
  });
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
