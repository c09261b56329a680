// A judging worker for tests that fails on demand, by the journey exit code the finish gave: 101 ends
// the thread as a crash would, 102 never answers (a hang); anything else is judged as the service does.
import { judgeWork } from '../../src/judging/work.mjs';

export default function failingJudge(input) {
  const code = input.journey.exitCode;
  if (code === 101) process.exit(70);
  if (code === 102) for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
  return judgeWork(input);
}
