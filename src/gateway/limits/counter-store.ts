import type { Logger } from "../../platform/logger.ts";
import { PgCounterStore } from "./pg-store.ts";
import type { CounterStore } from "./types.ts";

/** Every process sweeps: the stores make concurrent sweeps safe, and one minute is plenty. */
const sweepIntervalMs = 60_000;

export interface CounterStoreHandle {
  store: CounterStore;
  close(): Promise<void>;
}

/**
 * The usage counters: in Redis when a URL is given (settled usage is still written to
 * PostgreSQL), else in PostgreSQL. Reservations of crashed processes are swept periodically.
 */
export async function openCounterStore(options: {
  databaseUrl: string;
  redisUrl: string | undefined;
  redisKeyPrefix: string;
  logger: Logger;
}): Promise<CounterStoreHandle> {
  // The Redis client is loaded only when Redis is configured.
  const store: CounterStore = options.redisUrl
    ? new (await import("./redis-store.ts")).RedisCounterStore({
        redisUrl: options.redisUrl,
        databaseUrl: options.databaseUrl,
        keyPrefix: options.redisKeyPrefix,
      })
    : new PgCounterStore({ databaseUrl: options.databaseUrl });
  const timer = setInterval(() => {
    store.sweep(new Date()).then(
      (expired) => expired > 0 && options.logger.warn({ expired }, "expired usage reservations left by a process that stopped"),
      (err: unknown) => options.logger.warn({ err }, "usage reservation sweep failed"),
    );
  }, sweepIntervalMs);
  timer.unref();
  return {
    store,
    async close() {
      clearInterval(timer);
      await store.close();
    },
  };
}
