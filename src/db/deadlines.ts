/**
 * How long Warden waits for PostgreSQL, on every connection it opens. A database that does not
 * answer (stopped, frozen, cut off) turns into an error within these bounds, which the doors answer
 * as 503 (src/db/unavailable.ts), instead of a caller waiting for as long as the outage lasts.
 * `0` turns a bound off.
 */
export interface DatabaseDeadlines {
  /** Opening a connection, and waiting for a free one in a pool. */
  connectTimeoutMs: number;
  /** PostgreSQL cancels a statement that runs longer (SQLSTATE 57014). */
  statementTimeoutMs: number;
  /** A statement that waits longer for a lock fails (SQLSTATE 55P03). */
  lockTimeoutMs: number;
  /** PostgreSQL ends a session left idle inside a transaction this long, releasing its locks. */
  idleInTransactionTimeoutMs: number;
  /**
   * The client's own bound on a statement: a frozen server (its socket open, nothing answering)
   * never cancels anything itself. Longer than the statement timeout, so that a server that is
   * only slow answers with its own cancellation first. The connection is closed when it trips.
   */
  queryTimeoutMs: number;
  /** Connections that stay open (the gateway's LISTEN) ask `select 1` this often to notice a frozen server. */
  heartbeatIntervalMs: number;
}

export const defaultDatabaseDeadlines: DatabaseDeadlines = {
  connectTimeoutMs: 2_000,
  statementTimeoutMs: 5_000,
  lockTimeoutMs: 3_000,
  idleInTransactionTimeoutMs: 10_000,
  queryTimeoutMs: 6_000,
  heartbeatIntervalMs: 5_000,
};

/**
 * Migrations may rewrite large tables, and a process waits for another one's migrations to finish:
 * they keep the connect timeout, and every other bound becomes this one.
 */
export function migrationDeadlines(deadlines: DatabaseDeadlines, migrationTimeoutMs: number): DatabaseDeadlines {
  return {
    ...deadlines,
    statementTimeoutMs: migrationTimeoutMs,
    lockTimeoutMs: migrationTimeoutMs,
    idleInTransactionTimeoutMs: migrationTimeoutMs,
    queryTimeoutMs: migrationTimeoutMs,
  };
}

export const defaultMigrationTimeoutMs = 600_000;
