import { fileURLToPath } from 'node:url';
import { defineProject } from 'vitest/config';

export default defineProject({
  // The examples import the package by name; in the tests that name means src/index.ts.
  resolve: { alias: { '@partner-lending/sdk': fileURLToPath(new URL('./src/index.ts', import.meta.url)) } },
  test: {
    name: 'sdk',
    include: ['test/**/*.test.ts'],
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'], tsconfig: './tsconfig.json' },
  },
});
