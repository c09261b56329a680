import type { TokenServer } from './token-server.mjs';

export interface FailoverJob {
  topology: 'cluster' | 'sentinel';
  rootNodes?: { url: string }[];
  sentinelRootNodes?: { host: string; port: number }[];
  name?: string;
  tokenUrl: string;
  audience: string;
  clientId: string;
  clientSecret: string;
  encryptionKey: string;
  durationMs: number;
  timeoutMs: number;
  callers: number;
  intervalMs?: number;
  /** node-redis's default reconnection and topology refresh instead of the README's settings. */
  defaults?: boolean;
  /** Sentinel: `false` gives the store `sentinel: false` (node-redis alone finds the new primary). */
  follow?: boolean;
  /** Record the client's node and topology events, store failures and event-loop stalls in the timeline. */
  trace?: boolean;
}

export interface FailoverWorkerResult {
  calls: number;
  failed: number;
  errors: Record<string, number>;
  maxWaitMs: number;
  overDeadline: number;
  expired: number;
  expiredByExp: number;
  minLeftMs: number | null;
  tokens: string[];
  storeEvents: Record<string, number>;
  timeline: [string, number][];
  /** How long the worker's `client.connect()` took. */
  connectMs: number;
  /** The longest event-loop stall of the worker, and its CPU and wall time while calling. */
  maxStallMs: number;
  cpuMs: number;
  wallMs: number;
}

export interface FailoverOutcome {
  results: FailoverWorkerResult[];
  /** The process started cold during the failover (`coldAtMs`), if it finished. */
  cold: FailoverWorkerResult | undefined;
  /** Workers that did not exit 0 with a result (a crash), with their output's tail. */
  crashes: string[];
  crashesWithListener: number;
  crashesWithoutListener: number;
  killedAt: number;
  promotedAt: number;
  calls: number;
  failed: number;
  errors: Record<string, number>;
  expired: number;
  foreign: number;
  overDeadline: number;
  maxWaitMs: number;
  /** The longest event-loop stall of any process. */
  maxStallMs: number;
  minLeftMs: number;
  /** Per process that left Redis during the failover: ms from the promotion to its last `redis-ready`. */
  backAfterPromotionMs: number[];
  /** The fleet back on one shared token: the largest of backAfterPromotionMs (undefined if none left). */
  fleetBackMs: number | undefined;
  /** Per process whose client said 'ready' again (Sentinel): ms from that to the store's `redis-ready`. */
  backAfterClientReadyMs: number[];
  /** The timeline of the process back last (ms from the promotion, event, detail); richer with `trace`. */
  lastBackTimeline: string[];
  /** Processes that left Redis and never said it was back. */
  neverBack: number;
  /** What the Sentinel watch could not do, once each (its `sentinel-watch` messages). */
  watchNotes: string[];
  /** Token requests from the kill to the end of the run. */
  requestsFromKill: number;
  controls: number;
  controlsDied: number;
  controlOutput: string[];
}

export function runFailover(options: {
  job: FailoverJob;
  processes: number;
  listeners: (i: number) => boolean;
  controls?: number;
  tokens: TokenServer;
  killAtMs: number;
  /** Starts one more worker, cold, this long after the kill. */
  coldAtMs?: number;
  kill?: () => Promise<number>;
  primary?: () => Promise<number>;
}): Promise<FailoverOutcome>;

export function describeFailover(topology: string, outcome: FailoverOutcome): string;
