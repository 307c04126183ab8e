import { createInterface } from "node:readline";
import { PgCounterStore } from "../../src/gateway/limits/pg-store.ts";
import { RedisCounterStore } from "../../src/gateway/limits/redis-store.ts";
import type { CounterStore, UsageLimit } from "../../src/gateway/limits/types.ts";

/**
 * One "gateway process" of the multi-process race in usage-counters.test.ts. Reads its orders
 * from WORKER_ORDERS (JSON), opens a store of its own, prints "ready", waits for a line on stdin
 * (so that every process fires at once), fires `count` concurrent reserves and prints
 * {"granted": n}. Then it waits for a second line before settling each granted reservation with
 * `amount - (i % 7)` tokens, and prints {"settled": tokens}: a settle for less than was reserved
 * frees budget, so settling while another process still reserves would admit more than k.
 */

export interface WorkerOrders {
  backend: "pg" | "redis";
  databaseUrl: string;
  redisUrl: string;
  keyPrefix: string;
  limits: UsageLimit[];
  amount: number;
  count: number;
  now: string;
}

const orders = JSON.parse(process.env.WORKER_ORDERS ?? "") as WorkerOrders;
const store: CounterStore =
  orders.backend === "pg"
    ? new PgCounterStore({ databaseUrl: orders.databaseUrl, poolSize: 10 })
    : new RedisCounterStore({ databaseUrl: orders.databaseUrl, redisUrl: orders.redisUrl, keyPrefix: orders.keyPrefix, poolSize: 10 });
const now = new Date(orders.now);

await store.consumption(orders.limits, now); // connects before the start line
const input = createInterface({ input: process.stdin });
const lines = input[Symbol.asyncIterator]();
process.stdout.write("ready\n");
await lines.next();

const results = await Promise.all(Array.from({ length: orders.count }, () => store.reserve(orders.limits, orders.amount, now)));
process.stdout.write(`${JSON.stringify({ granted: results.filter((result) => result.ok).length })}\n`);
await lines.next();
input.close(); // nothing more to read: let the process end

let settled = 0;
await Promise.all(
  results.map((result, i) => {
    if (!result.ok) return undefined;
    settled += orders.amount - (i % 7);
    return store.settle(result.reservation, orders.amount - (i % 7));
  }),
);
await store.close();
process.stdout.write(`${JSON.stringify({ settled })}\n`);
