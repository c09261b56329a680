/**
 * A periodic sweep on this instance (retention's purges): `sweep` once at start and every `everyMs`,
 * never two at once (a tick while one runs is skipped), the timer not keeping the process alive. Errors
 * go to `failed`. The returned `stop` ends it and waits for a sweep under way.
 */
export function startSweep(
  sweep: () => Promise<void>,
  options: { everyMs: number; failed: (error: unknown) => void },
): () => Promise<void> {
  let running: Promise<void> | undefined;
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    running ??= sweep()
      .catch(options.failed)
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(tick, options.everyMs);
  timer.unref();
  setImmediate(tick);
  return async () => {
    stopped = true;
    clearInterval(timer);
    await running;
  };
}
