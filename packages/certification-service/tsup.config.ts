import { defineConfig } from 'tsup';

/** A service, not a library others bundle: ESM only, for Node 20. */
export default defineConfig({
  // The judging worker and the embedded database's thread are entries of their own: worker threads load
  // them by their files (see judging/pool.ts and db/database.ts).
  entry: ['src/index.ts', 'src/cli.ts', 'src/judging/work.mjs', 'src/db/embedded-thread.mjs'],
  format: ['esm'],
  dts: { entry: 'src/index.ts' },
  clean: true,
  sourcemap: true,
  target: 'node20',
});
