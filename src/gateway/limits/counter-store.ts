import { performance } from "node:perf_hooks";
import type { DatabaseDeadlines } from "../../db/deadlines.ts";
import type { Logger } from "../../platform/logger.ts";
import { PgCounterStore } from "./pg-store.ts";
import { Slices } from "./slices.ts";
import { leaseRenewalsPerTtl, type CounterStore } from "./types.ts";

export interface CounterStoreHandle {
  store: CounterStore;
  /** This process's slices of the limits' budgets, over `store`: what the gateway admits calls with. */
  slices: Slices;
  /** Writes the slices' last usage and gives their room back, then gives the lease up. */
  close(): Promise<void>;
}

/**
 * The usage counters: in Redis when a URL is given (settled usage is still written to
 * PostgreSQL), else in PostgreSQL. The store's lease is taken before it is handed out, then
 * renewed, and every process sweeps (the stores make concurrent sweeps safe), at each renewal:
 * the reservations of a process that died are released within `leaseTtlMs` and one renewal
 * interval of its last renewal.
 */
export async function openCounterStore(options: {
  databaseUrl: string;
  redisUrl: string | undefined;
  redisKeyPrefix: string;
  deadlines: DatabaseDeadlines;
  /** See `defaultLeaseTtlMs`. */
  leaseTtlMs: number;
  logger: Logger;
}): Promise<CounterStoreHandle> {
  // The Redis client is loaded only when Redis is configured.
  const store: CounterStore = options.redisUrl
    ? new (await import("./redis-store.ts")).RedisCounterStore({
        redisUrl: options.redisUrl,
        databaseUrl: options.databaseUrl,
        keyPrefix: options.redisKeyPrefix,
        deadlines: options.deadlines,
        leaseTtlMs: options.leaseTtlMs,
      })
    : new PgCounterStore({ databaseUrl: options.databaseUrl, deadlines: options.deadlines, leaseTtlMs: options.leaseTtlMs });
  // No reservation before the lease exists: it would be left to the 15-minute backstop.
  const firstRenewal = performance.now();
  await store.renewLease();
  const slices = new Slices(store, options.logger, { leaseTtlMs: options.leaseTtlMs });
  slices.leaseRenewed(firstRenewal);
  const intervalMs = Math.max(Math.floor(options.leaseTtlMs / leaseRenewalsPerTtl), 1);
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  // One tick at a time (a slow database must not pile them up), each scheduled after the last.
  const tick = async () => {
    const sent = performance.now();
    await store.renewLease().then(
      () => slices.leaseRenewed(sent),
      (err: unknown) => options.logger.warn({ err }, "could not renew the usage lease"),
    );
    await store.sweep(new Date()).then(
      (expired) => expired > 0 && options.logger.warn({ expired }, "released usage reservations left by a process that stopped"),
      (err: unknown) => options.logger.warn({ err }, "usage reservation sweep failed"),
    );
  };
  let closed = false;
  const schedule = (): void => {
    if (closed) return;
    timer = setTimeout(() => {
      running = tick().finally(schedule);
    }, intervalMs);
    timer.unref();
  };
  schedule();
  return {
    store,
    slices,
    async close() {
      // Before the lease goes: what the slices still hold is given back, not left to the sweep.
      await slices.close();
      closed = true;
      clearTimeout(timer);
      await running;
      await store.close();
    },
  };
}
