import { defineConfig } from 'tsup';

/** A service, not a library others bundle: ESM only, for Node 20. */
export default defineConfig({
  // The judging worker is an entry of its own: worker threads load it by its file (see judging/pool.ts).
  entry: ['src/index.ts', 'src/cli.ts', 'src/judging/work.mjs'],
  format: ['esm'],
  dts: { entry: 'src/index.ts' },
  clean: true,
  sourcemap: true,
  target: 'node20',
});
