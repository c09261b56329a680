import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { InternalError, ServiceError, StorageUnavailableError } from '../errors.js';
import type { Database, Row } from './types.js';

/** Opens PGlite in `dataDir` (created when missing). The directory belongs to one process at a time. */
export async function openEmbedded(dataDir: string): Promise<Database> {
  const { mkdirSync, openSync, closeSync, writeSync, readFileSync, rmSync } = await import('node:fs');
  const { join } = await import('node:path');
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  // PGlite does not lock its directory itself: two processes on one directory would corrupt it. A lock
  // file with the owner's pid keeps a second one out, and a stale lock (its process gone) is taken over.
  const lock = join(dataDir, 'service.lock');
  for (let attempt = 0; ; attempt += 1) {
    try {
      const fd = openSync(lock, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw inUse(dataDir, lock);
      const owner = Number.parseInt(readFileSync(lock, 'utf8'), 10);
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && alive(owner))
        throw inUse(dataDir, lock, owner);
      rmSync(lock, { force: true });
    }
  }
  let db: EmbeddedThread;
  try {
    const pgdata = join(dataDir, 'pgdata');
    // A fresh directory is initialised by a second WebAssembly instance (initdb) that PGlite keeps as
    // long as the database is open (about 360 MiB of the process's memory): initialised by a process
    // that then ends, the service holds only the database's own.
    if (!existsSync(join(pgdata, 'PG_VERSION'))) await initialiseApart(pgdata);
    db = await openEmbeddedThread(pgdata, dataDir);
  } catch (error) {
    rmSync(lock, { force: true });
    throw new ServiceError(
      'ERR_STORAGE',
      `cannot open the embedded database in ${dataDir}: ${(error as Error).message}. Is it a directory this user can write, made by this service?`,
    );
  }
  // The parameters are copied to the thread with the message (structured clone).
  const run = <T extends object = Row>(text: string, params?: readonly unknown[]) =>
    db.send<T>('query', { text, params });
  return {
    kind: 'embedded',
    where: dataDir,
    journalDir: join(dataDir, 'journal'),
    exclusive: true,
    query: run,
    queryUnflushed: run,
    async transaction(work) {
      const tx = await db.begin();
      let result: Awaited<ReturnType<typeof work>>;
      try {
        result = await work({ query: (text, params) => db.send('query', { text, params, tx }) });
      } catch (error) {
        await db.send('end', { tx, commit: false }).catch(() => {});
        throw error;
      }
      await db.send('end', { tx, commit: true });
      return result;
    },
    close: async () => {
      await db.close();
      rmSync(lock, { force: true });
    },
  };
}

/** PGlite on its worker thread (embedded-thread.mjs): statements sent as messages, rows read back. */
export interface EmbeddedThread {
  send<T extends object = Row>(op: 'query' | 'end' | 'close', fields: object): Promise<T[]>;
  /** Begins a transaction: its id, for its statements (`tx`) and its end. */
  begin(): Promise<number>;
  close(): Promise<void>;
}

/**
 * The worker thread's file: beside this module in the sources, `db/embedded-thread.js` beside the
 * build's chunks.
 */
function embeddedThreadFile(): URL {
  const candidates = [
    new URL('./db/embedded-thread.js', import.meta.url),
    new URL('./embedded-thread.mjs', import.meta.url),
  ];
  return candidates.find((candidate) => existsSync(candidate)) ?? candidates[1]!;
}

/**
 * Opens PGlite on a worker thread, so that no statement holds the thread that serves HTTP. A thread
 * that ends (WebAssembly out of memory, a crash) fails every statement waiting and every later one
 * with StorageUnavailableError: answered 503, and /readyz says so, until the service is restarted.
 * `file` is the thread's module (the tests give one that fails).
 */
export async function openEmbeddedThread(
  pgdata: string,
  dataDir: string,
  file: URL = embeddedThreadFile(),
): Promise<EmbeddedThread> {
  const worker = new Worker(file, { workerData: { pgdata } });
  const waiting = new Map<number, { resolve: (rows: Row[]) => void; reject: (error: Error) => void }>();
  let next = 0;
  let transactions = 0;
  let ended: Error | undefined;
  let closing = false;
  const end = (error: Error) => {
    ended ??= error;
    for (const { reject } of waiting.values()) reject(ended);
    waiting.clear();
  };
  await new Promise<void>((resolve, reject) => {
    const onMessage = (message: { ready?: true; failed?: string }) => {
      worker.off('error', onError);
      if (message.ready) resolve();
      else reject(new InternalError(message.failed ?? 'the database thread did not start'));
    };
    const onError = (error: Error) => {
      worker.off('message', onMessage);
      reject(error);
    };
    worker.once('message', onMessage);
    worker.once('error', onError);
  }).catch(async (error: unknown) => {
    await worker.terminate();
    throw error;
  });
  worker.on('message', (message: { id: number; rows?: Row[]; error?: Record<string, unknown> }) => {
    const entry = waiting.get(message.id);
    if (!entry) return;
    waiting.delete(message.id);
    if (message.error) entry.reject(Object.assign(new Error(String(message.error.message)), message.error));
    else entry.resolve(message.rows ?? []);
  });
  worker.on('error', (error) => end(new StorageUnavailableError(dataDir, error)));
  worker.on('exit', (code) => {
    if (!closing)
      end(new StorageUnavailableError(dataDir, new Error(`the database thread exited with code ${code}`)));
  });
  // The thread keeps the process alive only while a statement waits for it (as a socket would), so
  // that a program that is done exits without having to close the database first.
  worker.unref();
  const settle = () => {
    if (waiting.size === 0) worker.unref();
  };
  const send = <T extends object = Row>(op: string, fields: object): Promise<T[]> => {
    if (ended) return Promise.reject(ended);
    next += 1;
    const id = next;
    if (waiting.size === 0) worker.ref();
    return new Promise<T[]>((resolve, reject) => {
      waiting.set(id, { resolve: resolve as (rows: Row[]) => void, reject });
      worker.postMessage({ id, op, ...fields });
    }).finally(settle);
  };
  return {
    send,
    begin: () => {
      transactions += 1;
      const tx = transactions;
      return send('begin', { tx }).then(() => tx);
    },
    async close() {
      if (ended) return void (await worker.terminate());
      closing = true;
      await send('close', {});
      end(new InternalError('the embedded database is closed'));
      await worker.terminate();
    },
  };
}

/**
 * Creates the database in `pgdata` in a short-lived Node process, so that the memory initdb used goes
 * back to the system with the process (a worker thread's would stay in this process's allocator).
 */
async function initialiseApart(pgdata: string): Promise<void> {
  const { spawn } = await import('node:child_process');
  const child = spawn(
    process.execPath,
    [
      '--input-type=module',
      '--eval',
      `const { PGlite } = await import(process.env.PGLITE_URL);
       await (await PGlite.create(process.env.PGLITE_DATA)).close();`,
    ],
    {
      env: { ...process.env, PGLITE_URL: import.meta.resolve('@electric-sql/pglite'), PGLITE_DATA: pgdata },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    if (stderr.length < 4000) stderr += chunk;
  });
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0)
    throw new InternalError(`initdb exited with ${code}: ${stderr.trim().split('\n').slice(-3).join(' ')}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function inUse(dataDir: string, lock: string, owner?: number): ServiceError {
  return new ServiceError(
    'ERR_STORAGE_IN_USE',
    `the embedded database in ${dataDir} is in use${owner ? ` by process ${owner}` : ''} (${lock}): it belongs to one process at a time. Stop the service before running admin commands, or use PostgreSQL (DATABASE_URL) to run both at once.`,
  );
}
