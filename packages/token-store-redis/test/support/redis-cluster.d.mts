export interface RedisClusterServers {
  nodes: { port: number }[];
  rootNodes: { url: string }[];
  waitHealthy(timeoutMs?: number): Promise<void>;
  primaryOf(key: string): Promise<number>;
  kill(port: number): Promise<void>;
  restart(port: number): Promise<void>;
  stop(): Promise<void>;
}
export function startCluster(): Promise<RedisClusterServers>;
