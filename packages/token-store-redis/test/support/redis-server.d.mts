export interface RedisServer {
  port: number;
  url: string;
  dir: string;
  /** SIGKILL: the server vanishes without closing anything. */
  kill(): Promise<void>;
  /** Starts it again on the same port, empty. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}
export function startRedis(options?: { cluster?: boolean }): Promise<RedisServer>;
