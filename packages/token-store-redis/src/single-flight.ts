import { randomBytes } from 'node:crypto';
import type { StoredToken } from '@partner-lending/auth';
import { type Connection, messageOf } from './connection.js';
import type { Entries } from './entries.js';
import { RedisTokenStoreError } from './errors.js';
import { type Notices, formatNotice as notice } from './notices.js';
import type { Emit } from './options.js';
import { type RedisNames, redisNames } from './redis-keys.js';
import { acquireScript, releaseScript, renewScript, throttleScript } from './scripts.js';

export const throttledError = (waitMs: number, how: string) =>
  new RedisTokenStoreError(
    'ERR_REMOTE_THROTTLED',
    `the token endpoint asked ${how} to retry later (Retry-After, another ${Math.ceil(waitMs / 1000)} s): no process of the fleet sends a token request for these scopes until then.`,
    { remoteCode: 'ERR_TOKEN_THROTTLED', throttledUntil: Date.now() + waitMs },
  );

/** A stored token a flight may hand out: alive, not the one replaced, and newer than half its life when refreshing. */
export const fresh = (
  token: StoredToken | undefined,
  replacing: string | undefined,
): token is StoredToken => {
  if (token === undefined || token.accessToken === replacing) return false;
  const left = token.expiresAt - Date.now();
  if (left <= 0) return false;
  // A refresh wants a token newer than the one it replaces. A stored one past half its lifetime is
  // no such token (a process that went its own way while Redis was down may hold a newer one).
  return replacing === undefined || left > (token.expiresAt - token.obtainedAt) / 2;
};

/** A waiting process looks again at least this often: a hung Redis or a lost notice is found within it. */
const WAITER_CHECK_MS = 300;
/**
 * The holder's callers wait at most this long for its write: the token is theirs whatever happens, and
 * a write to a lost primary would otherwise keep them a whole commandTimeoutMs.
 */
const HOLDER_WRITE_WAIT_MS = 200;
/**
 * A lock whose time left is this far below two thirds of its lease missed its holder's renewal (every
 * third of the lease) and is taken over: room for a holder's event loop stalled that long.
 */
const MISSED_RENEWAL_GRACE_MS = 500;

export interface FlightSettings {
  namespace: string;
  channel: string;
  commandTimeoutMs: number;
  lockLeaseMs: number;
  emit: Emit;
}

/**
 * Single flight across processes: one process of the fleet takes the lock (a renewed lease) and asks
 * the token endpoint, the others wait for its notice (or its lock to lapse) and read what it wrote.
 */
export function createFlight(
  redis: Connection,
  entries: Entries,
  notices: Notices,
  settings: FlightSettings,
) {
  const { namespace, channel, commandTimeoutMs, lockLeaseMs, emit } = settings;
  const evaluate = redis.evaluate.bind(redis);
  const read = entries.read.bind(entries);
  const write = entries.write.bind(entries);
  const unavailable = redis.unavailable.bind(redis);
  const ensureSubscribed = async () => {
    await redis.ensureOpen('subscribe');
    try {
      await notices.subscribe();
    } catch (cause) {
      throw unavailable('subscribe', `the Redis notice connection is not up (${messageOf(cause)}).`, cause);
    }
    if (!notices.subscriber?.isReady && !redis.following) {
      throw unavailable(
        'subscribe',
        'the Redis notice connection is down (it reconnects by itself); the token provider falls back to its own token request meanwhile.',
      );
    }
  };

  const hold = async (
    names: RedisNames,
    lockId: string,
    fetchToken: () => Promise<StoredToken>,
    lease: { ms: number; until: number },
  ): Promise<StoredToken> => {
    // Renew the lease (a whole lease each time, so that a lock short of two thirds of it tells a missed
    // renewal: see acquireScript) while this process is alive and its request runs, up to the flight's
    // deadline; a lock not renewed is taken over within a third of the lease and a grace.
    const ms = String(lease.ms);
    const renewal = setInterval(
      () => {
        if (lease.until - Date.now() <= 0) return clearInterval(renewal);
        evaluate('single-flight', renewScript, [names.lock], [lockId, ms]).catch(() => {});
      },
      Math.max(10, Math.floor(lease.ms / 3)),
    );
    renewal.unref();
    let token: StoredToken;
    try {
      token = await fetchToken();
    } catch (error) {
      clearInterval(renewal);
      const code = String((error as { code?: unknown }).code ?? 'ERR_UNKNOWN');
      const retryAfterMs = (error as { retryAfterMs?: unknown }).retryAfterMs;
      if (code === 'ERR_TOKEN_THROTTLED' && typeof retryAfterMs === 'number' && retryAfterMs > 0) {
        // The endpoint throttles: the whole fleet waits as long as it asked, not just this process.
        const ms = String(Math.ceil(retryAfterMs));
        await evaluate(
          'single-flight',
          throttleScript,
          [names.lock, names.throttle],
          [lockId, channel, notice(names.tag, 'failed', lockId, code, retryAfterMs), ms],
        ).catch(() => {});
        throw error;
      }
      await evaluate(
        'single-flight',
        releaseScript,
        [names.lock],
        [lockId, channel, notice(names.tag, 'failed', lockId, code)],
      ).catch(() => {});
      throw error;
    }
    clearInterval(renewal);
    // The token is this caller's whatever happens next: a failed write only costs the others a wait.
    const message = notice(names.tag, 'ok', lockId);
    const written = (
      token.expiresAt > Date.now()
        ? write('single-flight', names, token, token.expiresAt, { lockId, message })
        : evaluate('single-flight', releaseScript, [names.lock], [lockId, channel, message])
    ).catch(() => {});
    // Normally done in a millisecond; on a lost primary the write goes on (bounded by its own deadline)
    // without keeping this process's callers.
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      written,
      new Promise<void>((resolve) => (timer = setTimeout(resolve, HOLDER_WRITE_WAIT_MS))),
    ]);
    clearTimeout(timer);
    return token;
  };

  const flight = async (
    key: string,
    fetchToken: () => Promise<StoredToken>,
    timeoutMs: number,
    replacing: string | undefined,
  ): Promise<StoredToken> => {
    const names = redisNames(namespace, key);
    const deadline = Date.now() + timeoutMs;
    await ensureSubscribed();
    const listener = notices.listen(names.tag);
    try {
      let waited = false;
      let takeover = false;
      // A waiter looks again at least this often: a hung Redis or a lost notice is found within it.
      // 300 ms: a lost primary costs a waiter one look and one timeout, not a second of waiting first.
      const checkMs = Math.min(commandTimeoutMs, WAITER_CHECK_MS);
      // Bounded: each round either returns, waits for a notice (at most checkMs), or finds the lock gone.
      const rounds = Math.ceil(timeoutMs / checkMs) + 100;
      for (let round = 0; round < rounds; round++) {
        listener.clear();
        const current = await read('single-flight', names);
        if (fresh(current, replacing)) return current;
        const lockMs = Math.max(1, Math.ceil(Math.min(timeoutMs, lockLeaseMs)));
        // The lease in the id: a waiter tells a lock that missed its renewal (see acquireScript).
        const lockId = `${randomBytes(16).toString('hex')}.${lockMs}`;
        const [acquired, lockTtl = -1, holder = ''] = await evaluate<[number, number?, string?]>(
          'single-flight',
          acquireScript,
          [names.lock, names.throttle],
          [lockId, String(lockMs), String(MISSED_RENEWAL_GRACE_MS)],
        );
        if (acquired === 2) throw throttledError(Number(lockTtl), 'a process of the fleet');
        if (acquired === 1) {
          // Taken over from a holder that stopped renewing (lockTtl is 1 then).
          if (Number(lockTtl) === 1) takeover = true;
          // A holder may have written between the read above and the lock: look once more.
          const landed = await read('single-flight', names);
          if (fresh(landed, replacing)) {
            await evaluate(
              'single-flight',
              releaseScript,
              [names.lock],
              [lockId, channel, notice(names.tag, 'ok', lockId)],
            ).catch(() => {});
            return landed;
          }
          emit({ type: 'lock-acquired', tag: names.tag, takeover });
          return await hold(names, lockId, fetchToken, { ms: lockMs, until: Date.now() + timeoutMs });
        }
        const left = deadline - Date.now();
        if (left <= 0) break;
        if (!waited) emit({ type: 'lock-waiting', tag: names.tag, lockTtlMs: Number(lockTtl) });
        waited = true;
        // Wake on the holder's notice, when its lock expires (a holder that died sends none), or after
        // checkMs to look again (a hung Redis times out that look, and the provider falls back).
        const lockEndsFirst = Number(lockTtl) >= 0 && Number(lockTtl) + 5 <= Math.min(left, checkMs);
        const wait = lockEndsFirst ? Number(lockTtl) + 5 : Math.min(left, checkMs);
        const next = await listener.next(wait);
        if (next.kind === 'failed' && next.lockId === holder && next.code === 'ERR_TOKEN_THROTTLED') {
          throw throttledError(next.waitMs, 'the process holding the token lock');
        }
        if (next.kind === 'failed' && next.lockId === holder) {
          throw new RedisTokenStoreError(
            'ERR_REMOTE_FETCH_FAILED',
            `the process that held the token lock reported that its token request failed (${next.code}); the same request from this process would most likely fail as well.`,
            { remoteCode: next.code },
          );
        }
        if (next.kind === 'timer' && lockEndsFirst) takeover = true;
        if (next.kind === 'down') await ensureSubscribed();
      }
      const message = `no token arrived from the process holding the token lock within ${timeoutMs} ms; the token provider falls back to its own token request.`;
      emit({ type: 'redis-error', operation: 'single-flight', code: 'ERR_SINGLE_FLIGHT_TIMEOUT', message });
      throw new RedisTokenStoreError('ERR_SINGLE_FLIGHT_TIMEOUT', message);
    } finally {
      listener.stop();
    }
  };

  return flight;
}
