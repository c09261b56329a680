import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'auth',
    include: ['test/**/*.test.ts'],
    // deadline.test.ts forces garbage collections to prove the request timers survive them.
    execArgv: ['--expose-gc'],
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'], tsconfig: './tsconfig.json' },
  },
});
