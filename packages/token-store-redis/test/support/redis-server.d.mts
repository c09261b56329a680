export interface RedisServer {
  port: number;
  url: string;
  dir: string;
  /** SIGKILL: the server vanishes without closing anything. */
  kill(): Promise<void>;
  /** SIGSTOP: the server hangs (connections and writes accepted, nothing answered). */
  pause(): void;
  /** SIGCONT: it answers again. */
  resume(): void;
  /** Starts it again on the same port, empty. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}
export function startRedis(options?: { cluster?: boolean; password?: string }): Promise<RedisServer>;
