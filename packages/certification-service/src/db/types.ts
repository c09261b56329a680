/** A row as the drivers give it. */
// biome-ignore lint/suspicious/noExplicitAny: rows are typed by the caller of each query
export type Row = Record<string, any>;

/** How a statement is sent. */
export interface QueryOptions {
  /**
   * The statement is one of the few every call makes (numbering, recording, tokens, scenarios): on
   * PostgreSQL it is prepared once per connection, under a name derived from its text, and later runs
   * send only its parameters (no parse, no plan of its text again). Only for statements whose text is
   * one of a few and whose columns are named (no `SELECT *`: a prepared statement's result columns
   * cannot change under it). PGlite runs it as any statement.
   */
  prepare?: boolean;
}

/** What the service asks of its database: SQL with `$1` parameters, and transactions. */
export interface Queryable {
  query<T extends object = Row>(
    text: string,
    params?: readonly unknown[],
    options?: QueryOptions,
  ): Promise<T[]>;
}

export interface Database extends Queryable {
  /** `embedded` (PGlite in a directory) or `postgres` (a server, by DATABASE_URL). */
  readonly kind: 'embedded' | 'postgres';
  /** Where it is, with no password: the directory, or the URL's host, port and database. */
  readonly where: string;
  /**
   * The journal of answered calls, which one process writes and the next replays: the embedded store's
   * is a directory beside its database files; PostgreSQL has one only when opened with `journalDir`
   * (one instance serves it). None where instances share the database.
   */
  readonly journalDir?: string;
  /**
   * This process alone serves the database's runs (numbers their calls and plays their scenarios in
   * memory): the embedded store (its directory is locked), or PostgreSQL opened with `journalDir` (its
   * serving lock held exclusively).
   */
  readonly exclusive: boolean;
  /** Runs `work` in one transaction (committed when it resolves, rolled back when it throws). */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * A statement whose commit need not wait for the disk: its effect is visible at once, and is made
   * durable by the next commit that does wait (PostgreSQL writes its log in order), or may be lost
   * with nothing else lost (a call's number, when the call was never recorded). PostgreSQL runs it
   * with `synchronous_commit = off`; PGlite as any statement.
   */
  queryUnflushed<T extends object = Row>(
    text: string,
    params?: readonly unknown[],
    options?: QueryOptions,
  ): Promise<T[]>;
  close(): Promise<void>;
}
