/**
 * Reserve + settle latency of the usage-counter stores at a fixed concurrency:
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres [REDIS_URL=redis://127.0.0.1:6379] \
 *     node scripts/bench-usage-counters.ts [concurrency=64] [pairs=4000]
 *
 * Creates a database of its own on DATABASE_URL's server (dropped at the end) and, for Redis, keys
 * under a prefix of its own (deleted at the end). Each backend runs two shapes, every request
 * reserving against three limits (key daily, user monthly, group all-time) and settling at once:
 * "shared", where every request goes to the same key, user and group (the hot rows: the worst
 * case for row locks), and "spread", where each of the concurrent loops has a key and user of its
 * own (the group still shared). Prints the median and p99 of reserve (the admission, on the
 * request's path), of settle (after the answer) and of both, and the pairs per second.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import pg from "pg";
import { usageCountersSql } from "../src/db/migrations/Migration20261121030000.ts";
import { createOrm } from "../src/db/orm.ts";
import { PgCounterStore } from "../src/gateway/limits/pg-store.ts";
import { RedisCounterStore } from "../src/gateway/limits/redis-store.ts";
import type { CounterStore, UsageLimit } from "../src/gateway/limits/types.ts";

const adminUrl = process.env.DATABASE_URL;
if (!adminUrl) throw new Error("DATABASE_URL must name a PostgreSQL server where this may create a database");
const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const concurrency = Number(process.argv[2] ?? 64);
const pairs = Number(process.argv[3] ?? 4000);
const keyPrefix = `warden-usage-bench:${randomBytes(6).toString("hex")}:`;
const dbName = `warden_usage_bench_${randomBytes(6).toString("hex")}`;

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function limits(workspaceId: string, key: string, user: string, group: string): UsageLimit[] {
  const big = 1e15; // never reached: this measures the cost, not refusals
  return [
    { id: key, workspaceId, scope: "key", subjectId: key, period: "daily", tokenLimit: big },
    { id: user, workspaceId, scope: "user", subjectId: user, period: "monthly", tokenLimit: big },
    { id: group, workspaceId, scope: "group", subjectId: group, period: "all_time", tokenLimit: big },
  ];
}

interface Figures {
  reserve: number[];
  settle: number[];
  pair: number[];
  perSecond: number;
}

async function run(store: CounterStore, limitsOf: (loop: number) => UsageLimit[]): Promise<Figures> {
  const now = new Date();
  const figures: Figures = { reserve: [], settle: [], pair: [], perSecond: 0 };
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, loop) => {
      const mine = limitsOf(loop);
      while (next < pairs) {
        next += 1;
        const t0 = performance.now();
        const result = await store.reserve(mine, 1000, now);
        const t1 = performance.now();
        if (!result.ok) throw new Error("refused");
        await store.settle(result.reservation, 700);
        const t2 = performance.now();
        figures.reserve.push(t1 - t0);
        figures.settle.push(t2 - t1);
        figures.pair.push(t2 - t0);
      }
    }),
  );
  figures.perSecond = (figures.pair.length / (performance.now() - started)) * 1000;
  return figures;
}

function quantile(values: number[], q: number): string {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!.toFixed(2).padStart(6);
}

await admin(`create database ${dbName}`);
const url = new URL(adminUrl);
url.pathname = `/${dbName}`;
const databaseUrl = url.toString();
try {
  const orm = await createOrm({ databaseUrl, entities: [] });
  await orm.close();
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  const workspaceId = randomUUID();
  if ((await pool.query("select to_regclass('usage_counter') as t")).rows[0].t === null) await pool.query(usageCountersSql);
  await pool.query("insert into workspace (id, name, slug, invite_code, status, date_created, date_updated) values ($1, 'Bench', $2, 'x', 'active', now(), now())", [
    workspaceId,
    `bench-${randomBytes(4).toString("hex")}`,
  ]);
  await pool.end();

  const backends: [string, () => CounterStore][] = [
    ["pg", () => new PgCounterStore({ databaseUrl })],
    ["redis", () => new RedisCounterStore({ databaseUrl, redisUrl, keyPrefix })],
  ];
  console.log(`concurrency ${concurrency}, ${pairs} reserve+settle pairs per row, 3 limits per request, pool of 10 connections per store`);
  console.log("backend  shape    reserve p50/p99 ms  settle p50/p99 ms  pair p50/p99 ms  pairs/s");
  for (const [name, open] of backends) {
    const store = open();
    const shared = limits(workspaceId, randomUUID(), randomUUID(), randomUUID());
    const group = randomUUID();
    const own = Array.from({ length: concurrency }, () => limits(workspaceId, randomUUID(), randomUUID(), group));
    await run(store, () => shared); // warm-up: connections, counters, cached scripts
    for (const [shape, limitsOf] of [["shared", () => shared], ["spread", (loop: number) => own[loop]!]] as const) {
      const f = await run(store, limitsOf);
      const cols = [f.reserve, f.settle, f.pair].map((values) => `${quantile(values, 0.5)} ${quantile(values, 0.99)}    `);
      console.log(`${name.padEnd(8)} ${shape.padEnd(8)} ${cols.join("  ")} ${f.perSecond.toFixed(0).padStart(7)}`);
    }
    await store.close();
  }
} finally {
  const redis = new Redis(redisUrl);
  let cursor = "0";
  for (let round = 0; round < 100_000; round++) {
    const [nextCursor, keys] = await redis.scan(cursor, "MATCH", `${keyPrefix}*`, "COUNT", 1000);
    if (keys.length > 0) await redis.del(...keys);
    cursor = nextCursor;
    if (cursor === "0") break;
  }
  await redis.quit();
  await admin(`drop database if exists ${dbName} with (force)`);
}
