import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const worker = fileURLToPath(new URL('./fleet-worker.mjs', import.meta.url));

export interface FleetJob {
  mode: 'single-flight' | 'provider' | 'provider-memory' | 'hold';
  redisUrl: string;
  tokenUrl: string;
  audience: string;
  callers?: number;
  key?: string | undefined;
  timeoutMs?: number;
  encryptionKey?: string;
  lockLeaseMs?: number;
}

export interface WorkerResult {
  ok: number;
  errors: string[];
  tokens: string[];
  events: string[];
}

/** A worker process, started and READY (its store connected); `go()` releases it. */
export interface Worker<R = WorkerResult> {
  child: ChildProcessWithoutNullStreams;
  output: () => string;
  go: () => void;
  /** Resolves when the worker prints `line` (e.g. LOCKED). */
  waitFor: (line: string) => Promise<void>;
  /** The worker's last stdout line, parsed, once it exited 0. */
  result: () => Promise<R>;
}

/**
 * Starts a worker script (`script`, default the fleet worker) with `job` in FLEET_JOB and resolves
 * once it prints READY.
 */
export async function startWorker<R = WorkerResult>(job: object, script = worker): Promise<Worker<R>> {
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, FLEET_JOB: JSON.stringify(job), NODE_NO_WARNINGS: '1' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const listeners = new Set<() => void>();
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    for (const listener of listeners) listener();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const waitFor = (line: string) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (out.split('\n').includes(line)) {
          listeners.delete(check);
          clearTimeout(timer);
          resolve();
        }
      };
      const timer = setTimeout(() => {
        listeners.delete(check);
        reject(new Error(`worker did not print ${line} in 20 s; stdout: ${out} stderr: ${err}`));
      }, 20_000);
      listeners.add(check);
      exited.then(() => {
        check();
        reject(new Error(`worker exited before printing ${line}; stdout: ${out} stderr: ${err}`));
      });
      check();
    });
  await waitFor('READY');
  return {
    child,
    output: () => out + err,
    go: () => child.stdin.write('go\n'),
    waitFor,
    result: async () => {
      const code = await exited;
      const last = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !last.startsWith('{')) {
        throw new Error(`worker failed (exit ${code}); stdout: ${out} stderr: ${err}`);
      }
      return JSON.parse(last) as R;
    },
  };
}

/** Starts `count` workers, waits until all are READY, then releases them together. */
export async function runFleet(count: number, job: FleetJob): Promise<WorkerResult[]> {
  const workers = await Promise.all(Array.from({ length: count }, () => startWorker(job)));
  for (const w of workers) w.go();
  return Promise.all(workers.map((w) => w.result()));
}
