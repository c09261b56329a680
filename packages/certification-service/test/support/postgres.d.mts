/** Debian's PostgreSQL binaries (any major version), if installed. */
export function postgresBin(): string | undefined;
/** A free loopback port. */
export function freePort(): Promise<number>;
export interface ThrowawayPostgres {
  readonly url: string;
  /** A fresh, empty database on the cluster; its URL. */
  database(name: string): Promise<string>;
  /** The URL of database `name` (made by `database`) through the server's Unix socket (pg's `host` parameter). */
  socketUrl(name: string): string;
  /** Stops the server (an outage: connections refused), keeping its data for `resume`. */
  halt(): Promise<void>;
  /**
   * A crash: the server and every process of it SIGKILLed at once, nothing written that was not written
   * already; `resume` starts it again, recovering from its log.
   */
  crash(): Promise<void>;
  /** Starts the halted server again on the same port and data; resolves once it accepts connections. */
  resume(): Promise<void>;
  stop(): Promise<void>;
}
/**
 * A throwaway PostgreSQL cluster from Debian's binaries, on 127.0.0.1 and a random port, trust
 * authentication, removed on stop; as root it runs as Debian's `postgres` user. `durable` keeps
 * PostgreSQL's flushes to disk (fsync), as a production server has them; tests turn them off.
 */
export function startPostgres(options?: {
  durable?: boolean;
  /** More server settings (`-c name=value`). */
  settings?: Record<string, string>;
}): Promise<ThrowawayPostgres>;
