import { judgeDuration } from './metrics.js';
import { inSpan } from './tracing.js';

type Judge<A extends unknown[]> = (id: string, ...rest: A) => Promise<boolean>;

/**
 * Wraps a run's judging: a span `judge run` (with the run id as an attribute, never as a metric label)
 * and `certification_judge_duration_seconds` by outcome. `outcomeOf` reads the stored outcome
 * (judged, interrupted) once it is done.
 */
export function observeJudge<A extends unknown[]>(
  judge: Judge<A>,
  outcomeOf: (id: string, ...rest: A) => string,
): Judge<A> {
  return (id, ...rest) => {
    const started = performance.now();
    return inSpan('judge run', { attributes: { 'certification.run.id': id } }, () => judge(id, ...rest)).then(
      (done) => {
        judgeDuration.observe(
          { outcome: done ? outcomeOf(id, ...rest) : 'skipped' },
          (performance.now() - started) / 1000,
        );
        return done;
      },
      (error: unknown) => {
        judgeDuration.observe({ outcome: 'failed' }, (performance.now() - started) / 1000);
        throw error;
      },
    );
  };
}
