// A judging worker for tests of the queue's order: each task takes 150 ms and answers its run's id.
export default function slowJudge(input) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 150);
  return { verdict: input.id };
}
