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
    ...extra,
  });
}
