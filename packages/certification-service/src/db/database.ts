import { openEmbedded } from './embedded.js';
import { openPostgres } from './postgres.js';
import type { Database } from './types.js';

// The database: what the service asks of it (types.ts), PGlite on its own thread (embedded.ts), PostgreSQL
// (postgres.ts) and its serving lock (serving-lock.ts).
export { type EmbeddedThread, openEmbedded, openEmbeddedThread } from './embedded.js';
export { openPostgres, type PostgresOptions, unreachable } from './postgres.js';
export type { Database, Queryable, Row } from './types.js';

/** The database the options name: PostgreSQL when `databaseUrl` is set, else PGlite in `dataDir`. */
export function openDatabase(options: {
  databaseUrl?: string | undefined;
  dataDir: string;
  /** PostgreSQL only: see `PostgresOptions.journalDir` and `serving`. */
  journalDir?: string | undefined;
  serving?: boolean;
}): Promise<Database> {
  if (!options.databaseUrl) return openEmbedded(options.dataDir);
  return openPostgres(options.databaseUrl, {
    ...(options.journalDir !== undefined && { journalDir: options.journalDir }),
    ...(options.serving && { serving: true }),
  });
}
