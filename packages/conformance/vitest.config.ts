import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'conformance',
    include: ['test/**/*.test.ts'],
    // The self-proof runs the suite against real mock servers, concurrently, on shared CPUs.
    testTimeout: 60_000,
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'], tsconfig: './tsconfig.json' },
  },
});
