// The embedded store's database on a thread of its own: PGlite (PostgreSQL compiled to WebAssembly)
// runs every statement on the thread that calls it, so on the thread that serves HTTP a statement of
// one run (a record batch, a judging's reads) held every other partner's calls for its whole length.
// Here it runs on a worker thread; the service's thread sends each statement as a message and reads
// the rows back (see `openEmbedded` in database.ts). Plain JavaScript so that the worker loads this
// very file from the sources and from the build.
//
// Messages in: {id, op: 'query', text, params, tx?} (tx: the id a transaction's 'begin' gave it),
// {id, op: 'begin', tx}, {id, op: 'end', tx, commit}, {id, op: 'close'}.
// Messages out: {ready: true} once open, or {failed: message}; then {id, rows} / {id, error}.
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';

/** An error as a plain object (its message, name and PostgreSQL's fields: code, detail, constraint…). */
function plain(error) {
  const out = { message: String(error?.message ?? error), name: String(error?.name ?? 'Error') };
  for (const [key, value] of Object.entries(error ?? {}))
    if (['string', 'number', 'boolean'].includes(typeof value)) out[key] = value;
  return out;
}

/** Ends a transaction's callback without committing it (PGlite rolls back when the callback throws). */
const rollback = Symbol('rollback');

/**
 * PostgreSQL's own start parameters, and 64 MB of shared buffers instead of its default 128 MB: they
 * are WebAssembly memory, which never shrinks, in the service's process (a service's working set, its
 * open runs, fits in far less; what is not in them is read from the files).
 */
const startParams = [...PGlite.defaultStartParams, '-c', 'shared_buffers=64MB'];

let db;
try {
  db = await PGlite.create(workerData.pgdata, { startParams });
  parentPort.postMessage({ ready: true });
} catch (error) {
  parentPort.postMessage({ failed: String(error?.message ?? error) });
}

/** Open transactions by id: the PGlite transaction, how to end its callback, and its outcome. */
const transactions = new Map();

parentPort.on('message', async (message) => {
  const { id } = message;
  try {
    if (message.op === 'query') {
      const target = message.tx === undefined ? db : transactions.get(message.tx)?.tx;
      if (!target) throw new Error(`transaction ${message.tx} is not open`);
      const result = await target.query(message.text, message.params);
      parentPort.postMessage({ id, rows: result.rows });
    } else if (message.op === 'begin') {
      // PGlite holds its transaction lock while the callback runs: statements outside it wait.
      let opened;
      const started = new Promise((resolve) => {
        opened = resolve;
      });
      const entry = {};
      entry.outcome = db.transaction(
        (tx) =>
          new Promise((resolve, reject) => {
            Object.assign(entry, { tx, resolve, reject });
            opened();
          }),
      );
      // A transaction that could not begin answers here; one that began answers at its end.
      entry.outcome.catch(() => {});
      await Promise.race([started, entry.outcome]);
      transactions.set(message.tx, entry);
      parentPort.postMessage({ id, rows: [] });
    } else if (message.op === 'end') {
      const entry = transactions.get(message.tx);
      if (!entry) throw new Error(`transaction ${message.tx} is not open`);
      transactions.delete(message.tx);
      if (message.commit) {
        entry.resolve();
        await entry.outcome;
      } else {
        entry.reject(rollback);
        await entry.outcome.catch((error) => {
          if (error !== rollback) throw error;
        });
      }
      parentPort.postMessage({ id, rows: [] });
    } else if (message.op === 'close') {
      await db?.close();
      parentPort.postMessage({ id, rows: [] });
      parentPort.close();
    } else throw new Error(`unknown operation ${String(message.op).slice(0, 40)}`);
  } catch (error) {
    parentPort.postMessage({ id, error: plain(error) });
  }
});
