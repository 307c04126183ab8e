import pg from "pg";
import type { DatabaseDeadlines } from "./deadlines.ts";

const readTimeoutMessage = "Query read timeout";

/**
 * A pg client that closes its connection when a statement trips the client-side query timeout.
 * pg alone rejects the caller but keeps the connection, still waiting for the answer, and gives it
 * back to its pool: the next user would queue behind the lost statement, or find itself inside the
 * transaction that statement left open once the server woke up. A connection that did not answer
 * in time is not trusted again; the pool replaces it.
 */
export class DeadlineClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    // A broken connection fails the statement in flight, which is how its caller learns of it, and
    // its pool drops it. The event itself must have a listener, or it would end the process.
    this.on("error", () => undefined);
  }
}

type Query = pg.Client["query"];
const query: Query = pg.Client.prototype.query;

// On the prototype, as pg's own: query() has a dozen overloads, and all of them end up here.
DeadlineClient.prototype.query = function deadlineQuery(this: DeadlineClient, ...args: unknown[]): unknown {
  const abandonOnTimeout = (err: unknown) => {
    if (err instanceof Error && err.message === readTimeoutMessage) this.end().catch(() => undefined);
  };
  const last = args.length - 1;
  const callback = args[last];
  if (typeof callback === "function") {
    args[last] = (err: unknown, ...rest: unknown[]) => {
      abandonOnTimeout(err);
      Reflect.apply(callback, undefined, [err, ...rest]);
    };
  }
  const result: unknown = Reflect.apply(query, this, args);
  // Registered before the caller's own handler, so the connection is closed before it is released.
  if (result instanceof Promise) result.catch(abandonOnTimeout);
  return result;
} as Query;

/** The pg settings that put `deadlines` on every connection: for pg pools, pg-boss and MikroORM alike. */
export function deadlineOptions(deadlines: DatabaseDeadlines) {
  return { Client: DeadlineClient, ...connectionSettings(deadlines) } satisfies pg.PoolConfig;
}

function connectionSettings(deadlines: DatabaseDeadlines) {
  return {
    connectionTimeoutMillis: deadlines.connectTimeoutMs,
    statement_timeout: deadlines.statementTimeoutMs,
    lock_timeout: deadlines.lockTimeoutMs,
    idle_in_transaction_session_timeout: deadlines.idleInTransactionTimeoutMs,
    query_timeout: deadlines.queryTimeoutMs,
    // A peer that vanished (host down, link cut) is noticed on idle connections too. A frozen
    // server is not: its kernel answers the probes, which is why the query timeout exists.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  } satisfies pg.ClientConfig;
}

export interface PoolOptions {
  databaseUrl: string;
  deadlines: DatabaseDeadlines;
  max: number;
  /** Told of errors on idle connections, which the pool then drops and replaces. */
  onIdleError?: (err: Error) => void;
}

/** A pool whose every connection carries the deadlines. */
export function createPool(options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: options.max, ...deadlineOptions(options.deadlines) });
  pool.on("error", options.onIdleError ?? (() => undefined));
  return pool;
}

/** Runs `work` in a transaction on one connection of `pool`: committed if it returns, rolled back if it throws. */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("begin");
    const result = await work(client);
    await client.query("commit");
    return result;
  } catch (err) {
    await client.query("rollback").catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** A single connection with the deadlines, for a LISTEN or an advisory lock. */
export function createClient(databaseUrl: string, deadlines: DatabaseDeadlines): DeadlineClient {
  return new DeadlineClient({ connectionString: databaseUrl, ...connectionSettings(deadlines) });
}
