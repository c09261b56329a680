/** The deadline of one call: one timer of our own, aborting `signal`; the caller's abort is linked in. */
export interface Deadline {
  signal: AbortSignal;
  /** Epoch ms (the transport's `now`) when it fires. */
  at: number;
  timeoutMs: number;
  /** What the call was doing when the deadline fired, for the error message. */
  phase: 'token' | 'api' | 'body';
  /** The caller's signal, when given. */
  userSignal: AbortSignal | undefined;
  timedOut(): boolean;
  clear(): void;
}

/** Starts a call's deadline. The timer is ours (kept by the event loop), so it fires whatever the GC does. */
export function startCallDeadline(
  timeoutMs: number,
  now: number,
  userSignal: AbortSignal | undefined,
): Deadline {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError'));
  }, timeoutMs);
  const onAbort = () => controller.abort(userSignal?.reason);
  if (userSignal) {
    if (userSignal.aborted) controller.abort(userSignal.reason);
    else userSignal.addEventListener('abort', onAbort, { once: true });
  }
  return {
    signal: controller.signal,
    at: now + timeoutMs,
    timeoutMs,
    phase: 'token',
    userSignal,
    timedOut: () => timedOut,
    clear() {
      clearTimeout(timer);
      userSignal?.removeEventListener('abort', onAbort);
    },
  };
}
