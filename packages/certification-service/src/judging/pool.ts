import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { InternalError, ServiceError } from '../errors.js';
import { type JudgeInput, type JudgeOutput, judgeWork } from './work.mjs';

/** Where judging runs: how many threads, how long a run may take, how much memory a thread may use. */
export interface JudgingOptions {
  /**
   * Judging threads (worker threads, started when needed, stopped after 30 s idle). 0 judges on the
   * service's own thread. Default: the machine's cores minus one, between 1 and 4.
   */
  threads: number;
  /** A run not judged within this long is answered as a failure (its thread is stopped). Default 120000 ms. */
  timeoutMs: number;
  /** The heap a judging thread may use (MiB); past it the thread stops and the run is a failure. Default 2048. */
  maxHeapMb: number;
  /** Runs waiting for a thread at most, over all partners; past it a finish is answered 503. Default 1000. */
  maxQueued: number;
}

export const defaultJudgingOptions: JudgingOptions = {
  threads: Math.max(1, Math.min(4, availableParallelism() - 1)),
  timeoutMs: 120_000,
  maxHeapMb: 2048,
  maxQueued: 1000,
};

/** Judging failed, not the run: the thread crashed, ran out of time or memory, or too many runs wait. */
export class JudgingUnavailableError extends ServiceError {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
    options?: { cause?: unknown },
  ) {
    super('ERR_JUDGING_UNAVAILABLE', message, options);
    this.name = 'JudgingUnavailableError';
  }
}

export interface JudgingPool {
  /** Judges a run of `partnerId`, in its turn among the partners waiting. */
  judge(partnerId: string, input: JudgeInput): Promise<JudgeOutput>;
  /** Runs waiting and being judged, for tests and metrics. */
  readonly pending: number;
  close(): Promise<void>;
}

/** The worker's file: next to this module in the sources, `judging/work.js` beside the build's chunks. */
function workerFile(): string {
  const candidates = [new URL('./judging/work.js', import.meta.url), new URL('./work.mjs', import.meta.url)];
  for (const candidate of candidates) if (existsSync(candidate)) return fileURLToPath(candidate);
  throw new InternalError(
    `the judging worker is missing (looked for ${candidates.map((c) => c.pathname).join(', ')})`,
  );
}

interface Waiting {
  input: JudgeInput;
  resolve: (output: JudgeOutput) => void;
  reject: (error: unknown) => void;
}

/**
 * A bounded pool of judging threads with a fair queue: each partner's runs wait in a queue of their own,
 * and a free thread takes the next run of the partner whose last turn is oldest (a partner with none
 * first), so that one partner's many finishes delay its own runs, not another's. Threads run at a lower
 * OS priority (nice +10, where supported), so that on a busy machine the HTTP thread is served first.
 * `filename` replaces the worker (tests).
 */
export function judgingPool(options: Partial<JudgingOptions> & { filename?: string } = {}): JudgingPool {
  const { threads, timeoutMs, maxHeapMb, maxQueued } = { ...defaultJudgingOptions, ...options };
  const piscina =
    threads > 0
      ? new Piscina<JudgeInput, JudgeOutput>({
          filename: options.filename ?? workerFile(),
          minThreads: 0,
          maxThreads: threads,
          idleTimeout: 30_000,
          niceIncrement: 10,
          resourceLimits: { maxOldGenerationSizeMb: maxHeapMb },
        })
      : undefined;
  /** Per partner, its runs waiting, in order. */
  const queues = new Map<string, Waiting[]>();
  /**
   * Per partner with a run waiting or being judged: when its last run was taken (a tick) and how many
   * are being judged. The next run is the waiting partner's whose last turn is oldest (never first).
   */
  const turns = new Map<string, { last: number; running: number }>();
  let tick = 0;
  let running = 0;
  let queued = 0;
  let closed = false;

  function next(): void {
    while (running < Math.max(1, threads) && queues.size > 0) {
      let partnerId: string | undefined;
      let oldest = Number.POSITIVE_INFINITY;
      for (const waiting of queues.keys()) {
        const last = turns.get(waiting)?.last ?? -1;
        if (last < oldest) {
          oldest = last;
          partnerId = waiting;
        }
      }
      const queue = queues.get(partnerId!)!;
      const task = queue.shift()!;
      if (queue.length === 0) queues.delete(partnerId!);
      const turn = turns.get(partnerId!) ?? { last: 0, running: 0 };
      turn.last = ++tick;
      turn.running += 1;
      turns.set(partnerId!, turn);
      queued -= 1;
      running += 1;
      run(task.input)
        .then(task.resolve, task.reject)
        .finally(() => {
          running -= 1;
          turn.running -= 1;
          if (turn.running === 0 && !queues.has(partnerId!)) turns.delete(partnerId!);
          next();
        });
    }
  }

  async function run(input: JudgeInput): Promise<JudgeOutput> {
    if (!piscina) return judgeWork(input);
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      return await piscina.run(input, { signal });
    } catch (error) {
      const why = signal.aborted
        ? `judging took longer than ${timeoutMs} ms and was stopped`
        : `the judging thread failed: ${(error as Error)?.message ?? String(error)}`;
      throw new JudgingUnavailableError(`run ${input.id}: ${why}`, 5, { cause: error });
    }
  }

  return {
    judge(partnerId, input) {
      if (closed) return Promise.reject(new JudgingUnavailableError('the service is stopping', 5));
      if (queued >= maxQueued)
        return Promise.reject(
          new JudgingUnavailableError(`run ${input.id}: ${queued} runs are waiting to be judged`, 5),
        );
      return new Promise<JudgeOutput>((resolve, reject) => {
        const queue = queues.get(partnerId);
        if (queue) queue.push({ input, resolve, reject });
        else queues.set(partnerId, [{ input, resolve, reject }]);
        queued += 1;
        next();
      });
    },
    get pending() {
      return queued + running;
    },
    async close() {
      closed = true;
      for (const queue of queues.values())
        for (const task of queue) task.reject(new JudgingUnavailableError('the service is stopping', 5));
      queues.clear();
      queued = 0;
      await piscina?.destroy();
    },
  };
}
