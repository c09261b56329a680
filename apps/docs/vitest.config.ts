import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'docs',
    include: ['test/**/*.test.ts'],
    // Builds the site once (VitePress, into a temporary folder) for the tests that read it.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
  },
});
