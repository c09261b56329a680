import { fileURLToPath } from 'node:url';
import { defineProject } from 'vitest/config';

export default defineProject({
  // The examples import the package by name; in the tests that name means src/index.ts.
  resolve: { alias: { '@partner-lending/sdk': fileURLToPath(new URL('./src/index.ts', import.meta.url)) } },
  test: {
    name: 'sdk',
    include: ['test/**/*.test.ts'],
    // A test's bounds are its own assertions; the runner's timeout only stops a hang, and must not fire
    // when a busy 2-core machine (CI at load 5–15) makes starting a process or a server take seconds.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'], tsconfig: './tsconfig.json' },
  },
});
