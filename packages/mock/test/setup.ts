import { afterEach } from 'vitest';
import { watchInternalErrors } from '../src/mock-server.js';

// Every test of the mock fails when any mock server of this process answered a 500 from an internal
// error (a bug, not an injected fault): the mock promises never a 5xx from input.
const seen: unknown[] = [];
watchInternalErrors((error) => seen.push(error));

afterEach(() => {
  const errors = seen.splice(0);
  if (errors.length > 0)
    throw new Error(
      `the mock answered ${errors.length} request(s) with an internal error (500): ${errors
        .map((error) => (error instanceof Error ? error.message : String(error)))
        .join('; ')}`,
    );
});

/** Takes the internal errors recorded so far (for the test that provokes one on purpose). */
export function takeInternalErrors(): unknown[] {
  return seen.splice(0);
}
