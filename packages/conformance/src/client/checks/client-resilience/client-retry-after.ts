import { clientFailed, clientNotVerified, clientPassed, defineClientCheck } from '../../check.js';
import type { RecordedExchange } from '../../session.js';
import { type ApiCall, firstAtOrAfter, line, maxConcurrency, seconds } from '../../view.js';

/** A retry this close to the time given counts as on time (timers and whole-second clocks). */
export const retryAfterGraceMs = 100;

/**
 * How long after the 429/503 was complete a call may still arrive and count as already in flight:
 * the answer's way to the client and a call it had already set out on, on the stage's loopback. It
 * never reaches the delay the stage holds every API answer (`apiDelayMs`), so that of calls made one
 * after another — each started after the previous one was answered — at most the first can fit in it.
 */
export const inFlightTransitMs = 10;

/** The window after the answer in which a call was already in flight, for a session's stage. */
export const inFlightWindowMs = (apiDelayMs: number) => Math.max(0, Math.min(inFlightTransitMs, apiDelayMs));

/**
 * How long after the 429/503 a call of a client that makes several calls at once may still arrive and
 * count as set out before the answer reached it: its other calls of the same moment, held up by a busy
 * machine (a process forked, a thread scheduled late; 30 ms and more measured under CPU contention). At
 * most as many as the client ever had open at once, less the one answered and those that did arrive in
 * flight with it, and each arriving before any of them was answered — so a client making one call at a
 * time gets none, and a worker that sends again after an answer is judged on that call.
 */
export const concurrentSetOutMs = 1000;

/**
 * Of the calls that came before the time given, those a concurrent client had set out on before the
 * answer arrived (see `concurrentSetOutMs`), and the rest.
 */
function inFlightOf(early: readonly ApiCall[], sent: number, slots: number, concurrent: readonly ApiCall[]) {
  const inFlight: ApiCall[] = [];
  const rest: ApiCall[] = [];
  // Calls already in flight with the answered one took their slots; one answered since freed none.
  slots -= concurrent.length;
  let firstAnswer = Math.min(...concurrent.map((call) => call.exchange.end));
  for (const call of early) {
    const { at, end } = call.exchange;
    if (inFlight.length < slots && at < sent + concurrentSetOutMs && at < firstAnswer) {
      inFlight.push(call);
      firstAnswer = Math.min(firstAnswer, end);
    } else rest.push(call);
  }
  return { inFlight, rest };
}

/** Seconds of a Retry-After header (delay-seconds or an HTTP date, RFC 9110 §10.2.3). */
export function retryAfterMs(exchange: RecordedExchange, sessionStart: number): number | undefined {
  const value = exchange.responseHeaders['retry-after'];
  if (value === undefined) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - sessionStart - exchange.end);
}

export default defineClientCheck({
  id: 'client-retry-after',
  title: 'After 429 or 503 with Retry-After, no call to the API before the time given',
  category: 'client-resilience',
  severity: 'should',
  reference: 'RFC 9110 §10.2.3, §15.6.4; RFC 6585 §4',
  citation:
    '"Servers send the "Retry-After" header field to indicate how long the user agent ought to wait before making a follow-up request." (RFC 9110 §10.2.3); 429 "MAY include a Retry-After header indicating how long to wait before making a new request" (RFC 6585 §4) — a follow-up is a request the client could send after the answer arrived; one it had sent before is not',
  precondition:
    'the throttle or unavailable scenario fired and the journey called the API again afterwards (a follow-up to judge)',
  records: `each 429/503 the stage sent with its Retry-After, and every later API call, of any operation, that came before the time given; a call counts as already in flight only when it arrived before the answer was complete (or within ${inFlightTransitMs} ms after, its way back on loopback, never as long as the stage holds an API answer), or, for a client that makes several calls at once, when it is one of the calls of that moment held up by a busy machine (at most as many as the client ever had open at once, less one, within ${concurrentSetOutMs} ms, none of them answered yet)`,
  fix: 'read Retry-After (seconds or an HTTP date) on 429 and 503 and send no request to the API — of any operation — until that time has passed',
  judge({ session, apiCalls }) {
    const start = Date.parse(session.startedAt);
    const episodes = apiCalls.filter((call) => call.exchange.status === 429 || call.exchange.status === 503);
    const timed = episodes.filter((call) => retryAfterMs(call.exchange, start) !== undefined);
    if (timed.length === 0)
      return clientNotVerified(
        'no call was answered 429 or 503 with Retry-After (the scenarios did not fire)',
      );
    const evidence: RecordedExchange[] = [];
    const problems: string[] = [];
    const verified: string[] = [];
    const slots = maxConcurrency(apiCalls) - 1;
    for (const episode of timed) {
      const wait = retryAfterMs(episode.exchange, start)!;
      const sent = episode.exchange.end;
      // In flight: arrived before the answer was complete, or on its heels (the answer's way back);
      // every call after could only have been sent once the client had the answer (arrival order: a range).
      const from = firstAtOrAfter(
        apiCalls.map((call) => call.exchange),
        sent + inFlightWindowMs(session.stage.apiDelayMs),
      );
      // Never the episode itself (an answer can be complete the millisecond its request arrived).
      // Calls from just after the episode to `from` arrived in flight with it; the rest follow it.
      const after = apiCalls.indexOf(episode) + 1;
      const followUps: ApiCall[] = apiCalls.slice(Math.max(from, after));
      evidence.push(episode.exchange);
      if (followUps.length === 0) continue;
      const { inFlight, rest: early } = inFlightOf(
        followUps.filter((call) => call.exchange.at < sent + wait - retryAfterGraceMs),
        sent,
        slots,
        apiCalls.slice(after, Math.max(from, after)),
      );
      const next = followUps.find((call) => !inFlight.includes(call));
      evidence.push(
        ...inFlight.map((c) => c.exchange),
        ...early.slice(0, 10).map((c) => c.exchange),
        ...(next ? [next.exchange] : []),
      );
      if (early.length > 0) {
        const other = early.filter((call) => call.key !== episode.key).length;
        problems.push(
          `${line(episode.exchange)} said Retry-After ${wait / 1000} s; ${early.length} API call${early.length === 1 ? '' : 's'} came sooner${other > 0 ? ` (${other} of another operation)` : ''}, the first after ${seconds(early[0]!.exchange.at - sent)}: ${line(early[0]!.exchange)}`,
        );
      } else if (next) {
        const held =
          inFlight.length > 0
            ? ` (${inFlight.length} call${inFlight.length === 1 ? '' : 's'} of the same moment arrived first, set out before the answer: the client makes up to ${slots + 1} at once)`
            : '';
        verified.push(
          `${line(episode.exchange)}: Retry-After ${wait / 1000} s, the next API call (${next.key}) came after ${seconds(next.exchange.at - sent)}${held}`,
        );
      }
    }
    if (problems.length > 0) return clientFailed(problems.join('\n'), evidence);
    if (verified.length === 0)
      return clientNotVerified(
        `the journey made no API call after the 429/503 (${timed.map((e) => line(e.exchange)).join('; ')})`,
        evidence,
      );
    return clientPassed(verified.join('\n'), evidence);
  },
});
