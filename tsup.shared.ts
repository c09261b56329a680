import { defineConfig, type Options } from 'tsup';

/** The one build of every package: ESM + CJS with declarations, for Node 20. */
export function packageBuild(entry: string[], extra: Options = {}) {
  return defineConfig({
    entry,
    format: ['esm', 'cjs'],
    dts: true,
    clean: true,
    sourcemap: true,
    target: 'node20',
    // Classes keep their names (`error.name`, stack traces): without it esbuild renames a class that refers
    // to itself (a static method) to `_Name` in both formats.
    keepNames: true,
    ...extra,
  });
}
