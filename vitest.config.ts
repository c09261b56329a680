import { defineConfig } from 'vitest/config';

// Vitest prints "Testing types with tsc and vue-tsc is an experimental feature" once per project that
// type-tests (six of them): a notice for whoever chose the feature (we pin vitest), not for someone
// running the tests, who takes it for a problem. Only that notice is dropped; every other write passes.
const typecheckNotice = 'Testing types with tsc and vue-tsc is an experimental feature';
const write = process.stderr.write.bind(process.stderr);
process.stderr.write = ((chunk: unknown, ...rest: unknown[]) => {
  if (String(chunk).includes(typecheckNotice)) return true;
  return (write as (...args: unknown[]) => boolean)(chunk, ...rest);
}) as typeof process.stderr.write;

// One run, one summary: every workspace package is a vitest project with its own vitest.config.ts.
export default defineConfig({
  test: {
    projects: ['spec', 'packages/*', 'apps/*', 'scripts'],
  },
});
