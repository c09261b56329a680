import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'certification-service',
    include: ['test/**/*.test.ts'],
    // End-to-end runs start real services, journeys, PostgreSQL and Chromium on shared CPUs.
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
