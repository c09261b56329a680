import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts', 'src/cli.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  // The documented responses are read from the bundled spec at build time: Node 20 cannot import JSON
  // without an import attribute, which esbuild drops from external imports.
  noExternal: [/^@partner-lending\/spec\/openapi\.json$/],
});
