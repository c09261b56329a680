import { createHash } from 'node:crypto';

/** A Lua script run with EVALSHA, falling back to EVAL once when the server does not know it yet. */
export interface Script {
  source: string;
  sha1: string;
}

function script(source: string): Script {
  return { source, sha1: createHash('sha1').update(source).digest('hex') };
}

/**
 * Takes the lock with SET NX PX, or tells who holds it and for how long; while the token endpoint
 * asks the fleet to wait (the throttle key is set), takes nothing and tells for how long.
 * A lock id ends with its lease (`<hex>.<ms>`), and a live holder renews it every third of the lease:
 * a lock whose time left fell more than `grace` ms below two thirds of its lease missed a renewal — its
 * holder is gone (killed, or its renewals went to a primary that died and the lock came over to the
 * replica promoted in its place) — and is taken over at once instead of blocking the fleet until it
 * expires.
 * KEYS: lock, throttle. ARGV: lock id, ms, grace ms. Returns `{1}`, `{1, 1}` (taken over),
 * `{0, pttl, holder id}` or `{2, throttle pttl}`.
 */
export const acquireScript = script(`
local wait = redis.call('PTTL', KEYS[2])
if wait > 0 then return {2, wait} end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {1} end
local holder = redis.call('GET', KEYS[1]) or ''
local ttl = redis.call('PTTL', KEYS[1])
local lease = tonumber(string.match(holder, '%.(%d+)$'))
if lease and ttl >= 0 and ttl < lease * 2 / 3 - tonumber(ARGV[3]) then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {1, 1}
end
return {0, ttl, holder}
`);

/**
 * The lock holder was told to retry later: records the throttle for the fleet (PX ms), releases the
 * lock if this holder still owns it, and announces the failure.
 * KEYS: lock, throttle. ARGV: lock id, channel, message, ms.
 */
export const throttleScript = script(`
redis.call('SET', KEYS[2], '1', 'PX', ARGV[4])
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
`);

/**
 * Writes a token only if it is newer than the stored one (later expiry; on a tie, later request
 * start), in one step, so a late writer never replaces a newer token. An entry sealed with another
 * key id (or in clear) is replaced: it is unreadable to this writer anyway. Then releases the lock if
 * this writer still owns it (compare-and-delete) and announces the outcome to waiting processes.
 * The key expires at an absolute time (PEXPIREAT: the entry's own expiry, or earlier): a write that
 * waited in a socket or a paused server never leaves the key alive past the token.
 * KEYS: token, lock. ARGV: v, k, e, o, expire-at (epoch ms), lock id or '', channel or '', message.
 * Returns 1 when written, 0 when a newer token was kept.
 */
export const writeScript = script(`
local cur = redis.call('HMGET', KEYS[1], 'k', 'e', 'o')
local newer = true
if cur[1] == ARGV[2] then
  local ce = tonumber(cur[2])
  local co = tonumber(cur[3])
  local e = tonumber(ARGV[3])
  local o = tonumber(ARGV[4])
  if ce and co and (ce > e or (ce == e and co >= o)) then newer = false end
end
if newer then
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'v', ARGV[1], 'k', ARGV[2], 'e', ARGV[3], 'o', ARGV[4])
  redis.call('PEXPIREAT', KEYS[1], ARGV[5])
end
if ARGV[6] ~= '' and redis.call('GET', KEYS[2]) == ARGV[6] then redis.call('DEL', KEYS[2]) end
if ARGV[7] ~= '' then redis.call('PUBLISH', ARGV[7], ARGV[8]) end
if newer then return 1 end
return 0
`);

/**
 * Releases the lock if this holder still owns it, and announces the outcome.
 * KEYS: lock. ARGV: lock id, channel, message.
 */
export const releaseScript = script(`
local owned = 0
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  owned = 1
end
redis.call('PUBLISH', ARGV[2], ARGV[3])
return owned
`);

/**
 * Extends the lock if this holder still owns it (a live holder renews its lease; a dead one does not).
 * KEYS: lock. ARGV: lock id, ms. Returns 1 when extended.
 */
export const renewScript = script(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`);

/** Deletes an unreadable entry only if it is still the same one. KEYS: token. ARGV: v. */
export const dropScript = script(`
if redis.call('HGET', KEYS[1], 'v') == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`);
