export const PRIMARY_NAME: string;
export interface SentinelServers {
  sentinelRootNodes: { host: string; port: number }[];
  primaryPort(): Promise<number>;
  /** Resolves once every replica of the current primary has acknowledged all it was sent. */
  replicated(): Promise<void>;
  kill(port: number): Promise<void>;
  restart(port: number): Promise<void>;
  stop(): Promise<void>;
}
/** `downAfterMs` (1000): the sentinels' `down-after-milliseconds`. */
export function startSentinel(options?: { downAfterMs?: number }): Promise<SentinelServers>;
