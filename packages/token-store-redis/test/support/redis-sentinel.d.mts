export const PRIMARY_NAME: string;
export interface SentinelServers {
  sentinelRootNodes: { host: string; port: number }[];
  primaryPort(): Promise<number>;
  kill(port: number): Promise<void>;
  restart(port: number): Promise<void>;
  stop(): Promise<void>;
}
export function startSentinel(): Promise<SentinelServers>;
