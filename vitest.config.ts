import { defineConfig } from 'vitest/config';

// One run, one summary: every workspace package is a vitest project with its own vitest.config.ts.
export default defineConfig({
  test: {
    projects: ['spec', 'packages/*', 'apps/*'],
  },
});
