import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'token-store-redis',
    include: ['test/**/*.test.ts'],
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'], tsconfig: './tsconfig.json' },
  },
});
