/**
 * Whether an error means that PostgreSQL (or the Redis of the usage counters) could not be reached or did not answer in time, rather
 * than that a statement was wrong. Such failures are transient: callers get 503 and retry. Errors
 * come raw from pg or wrapped by MikroORM (which copies `code` and the message), so both the code
 * and pg's messages (it gives its own timeouts no code) are read, along the `cause` chain.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let depth = 0; err instanceof Error && depth < 5; depth++) {
    const code: unknown = (err as { code?: unknown }).code;
    if (typeof code === "string" && (unavailableSqlStates.has(code) || code.startsWith("08") || socketErrorCodes.has(code))) return true;
    if (unavailableMessages.some((message) => err instanceof Error && err.message.startsWith(message))) return true;
    if (err instanceof AggregateError && err.errors.some(isDatabaseUnavailable)) return true;
    err = err.cause;
  }
  return false;
}

const unavailableSqlStates = new Set([
  "57014", // query_canceled: the statement timeout
  "55P03", // lock_not_available: the lock timeout
  "25P03", // idle_in_transaction_session_timeout
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now: starting up, shutting down, recovering
  "53300", // too_many_connections
  "53400", // configuration_limit_exceeded
]);

const socketErrorCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
]);

/** pg's, pg-pool's and ioredis's own failures, which carry no code. */
const unavailableMessages = [
  "Query read timeout",
  "timeout exceeded when trying to connect",
  "timeout expired",
  "Connection terminated",
  "Client has encountered a connection error and is not queryable",
  "Client was closed and is not queryable",
  // ioredis, for the usage counters in Redis: a command not answered in time, a lost connection.
  "Command timed out",
  "Reached the max retries per request limit",
  "Connection is closed.",
];
