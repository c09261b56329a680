import { defineConfig } from 'tsup';

/** A service, not a library others bundle: ESM only, for Node 20. */
export default defineConfig({
  entry: ['src/index.ts', 'src/cli.ts'],
  format: ['esm'],
  dts: { entry: 'src/index.ts' },
  clean: true,
  sourcemap: true,
  target: 'node20',
});
