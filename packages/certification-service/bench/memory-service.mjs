// The service measured by bench/memory.bench.mjs, in a process of its own so that its memory is its
// alone: started on MEM_DATA_DIR (PGlite) or MEM_DATABASE_URL, one partner with room for many runs.
// Sends {url, apiKey} once listening; answers 'memory' with process.memoryUsage() ('memory-after-gc': after
// a full collection); 'stop' stops it.
import { writeHeapSnapshot } from 'node:v8';
import { addPartner, loadSigningKey, openDatabase, startService } from '../dist/index.js';

const dataDir = process.env.MEM_DATA_DIR;
const db = await openDatabase({ databaseUrl: process.env.MEM_DATABASE_URL || undefined, dataDir });
const signingKey = await loadSigningKey({ dataDir, warn: () => {} });
const service = await startService({
  db,
  signingKey,
  port: 0,
  tokenDelayMs: 0,
  apiDelayMs: 0,
  limits: { maxOpenRunsPerPartner: 1000, maxRunsPerHour: 1_000_000 },
  fairness: { apiConcurrency: 1000, apiRequestsPerSecond: 100_000, createConcurrency: 100 },
  log: () => {},
});
const { apiKey } = await addPartner(db, 'Memory');
process.on('message', async (message) => {
  if (message === 'memory') process.send({ memory: process.memoryUsage() });
  // After a full collection: what the heap still holds (run with --expose-gc).
  if (message === 'memory-after-gc') {
    globalThis.gc?.();
    // BENCH_MEMORY_SNAPSHOT=FILE: a heap snapshot then, for a look at what is held.
    if (process.env.BENCH_MEMORY_SNAPSHOT) writeHeapSnapshot(process.env.BENCH_MEMORY_SNAPSHOT);
    process.send({ memory: process.memoryUsage() });
  }
  if (message === 'stop') {
    await service.close();
    await db.close();
    process.exit(0);
  }
});
process.send({ url: service.url, apiKey });
