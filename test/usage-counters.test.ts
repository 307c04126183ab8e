import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { once } from "node:events";
import path from "node:path";
import { createInterface } from "node:readline";
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createOrm } from "../src/db/orm.ts";
import { periodKey, periodStart, resetsAt } from "../src/gateway/limits/periods.ts";
import { PgCounterStore, pgPeriod, recordSettledUsage } from "../src/gateway/limits/pg-store.ts";
import { RedisCounterStore } from "../src/gateway/limits/redis-store.ts";
import type { CounterStore, LimitPeriod, LimitScope, Reservation, ReserveResult, UsageLimit } from "../src/gateway/limits/types.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import type { WorkerOrders } from "./support/usage-counter-worker.ts";

/**
 * Usage-limit counters, for both stores, on a database of their own (the base schema by the
 * migrator, then the counters' migration SQL) and, for Redis, keys under a prefix of their own.
 * Clocks are injected: no test sleeps or times anything.
 */

const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const keyPrefix = `warden-test:${randomBytes(6).toString("hex")}:`;
let database: TestDatabase;
let workspaceId: string;
/** Stores a test opened for itself, closed after it: each holds a pool of up to 10 connections. */
const scratch: CounterStore[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  const orm = await createOrm({ databaseUrl: database.url, entities: [] });
  await orm.close();
  workspaceId = randomUUID();
  await withPool(async (pool) => {
    await pool.query(
      `insert into workspace (id, name, slug, invite_code, status, date_created, date_updated)
       values ($1, 'Usage', $2, 'invite', 'active', now(), now())`,
      [workspaceId, `usage-${randomBytes(4).toString("hex")}`],
    );
  });
});

afterEach(async () => {
  await Promise.all(scratch.splice(0).map((store) => store.close()));
});

afterAll(async () => {
  await deleteRedisKeys(`${keyPrefix}*`);
  await database?.drop();
});

async function withPool<T>(fn: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  try {
    return await fn(pool);
  } finally {
    await pool.end();
  }
}

async function deleteRedisKeys(pattern: string): Promise<void> {
  const redis = new Redis(redisUrl);
  try {
    let cursor = "0";
    for (let round = 0; round < 10_000; round++) {
      const [next, keys] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
      if (cursor === "0") break;
    }
  } finally {
    await redis.quit();
  }
}

interface Backend {
  name: "pg" | "redis";
  open(clock?: () => Date): CounterStore;
}

const backends: Backend[] = [
  { name: "pg", open: (clock) => track(new PgCounterStore({ databaseUrl: database.url, clock })) },
  { name: "redis", open: (clock) => track(new RedisCounterStore({ databaseUrl: database.url, redisUrl, keyPrefix, clock })) },
];

function track(store: CounterStore): CounterStore {
  scratch.push(store);
  return store;
}

function limit(period: LimitPeriod, tokenLimit: number, scope: LimitScope = "key"): UsageLimit {
  return { id: randomUUID(), workspaceId, scope, subjectId: randomUUID(), period, unit: "tokens", tokenLimit };
}

function granted(result: ReserveResult): Reservation {
  if (!result.ok) throw new Error(`refused by ${result.limit.scope} ${result.limit.period} limit`);
  return result.reservation;
}

async function usage(store: CounterStore, l: UsageLimit, now: Date): Promise<{ used: number; reserved: number }> {
  const { used, reserved } = (await store.consumption([l], now)).get(l.id)!;
  return { used, reserved };
}

/** Settled usage as PostgreSQL holds it, read through a pool of its own. */
function durableUsed(l: UsageLimit, now: Date): Promise<number> {
  return withPool(async (pool) => {
    const { rows } = await pool.query<{ used: string }>("select used from usage_counter where limit_id = $1 and period_start = $2", [
      l.id,
      pgPeriod(periodKey(l.period, now)),
    ]);
    return Number(rows[0]?.used ?? 0);
  });
}

const at = (iso: string) => new Date(iso);

describe("periods", () => {
  it.each([
    // [period, now, start, resets]
    ["daily", "2026-11-25T00:00:00.000Z", "2026-11-25T00:00:00.000Z", "2026-11-26T00:00:00.000Z"],
    ["daily", "2026-12-31T23:59:59.999Z", "2026-12-31T00:00:00.000Z", "2027-01-01T00:00:00.000Z"],
    ["weekly", "2026-11-23T00:00:00.000Z", "2026-11-23T00:00:00.000Z", "2026-11-30T00:00:00.000Z"], // a Monday
    ["weekly", "2026-11-25T13:00:00.000Z", "2026-11-23T00:00:00.000Z", "2026-11-30T00:00:00.000Z"], // Wednesday
    ["weekly", "2026-11-29T23:59:59.999Z", "2026-11-23T00:00:00.000Z", "2026-11-30T00:00:00.000Z"], // Sunday: still that week
    ["weekly", "2026-12-31T12:00:00.000Z", "2026-12-28T00:00:00.000Z", "2027-01-04T00:00:00.000Z"], // across a year
    ["monthly", "2026-11-30T23:59:59.999Z", "2026-11-01T00:00:00.000Z", "2026-12-01T00:00:00.000Z"],
    ["monthly", "2026-12-15T00:00:00.000Z", "2026-12-01T00:00:00.000Z", "2027-01-01T00:00:00.000Z"],
    ["monthly", "2028-02-29T08:00:00.000Z", "2028-02-01T00:00:00.000Z", "2028-03-01T00:00:00.000Z"],
  ] as const)("%s at %s starts %s and resets at %s", (period, now, start, resets) => {
    expect(periodStart(period, at(now))?.toISOString()).toBe(start);
    expect(resetsAt(period, at(now))?.toISOString()).toBe(resets);
  });

  it("all_time never starts over", () => {
    expect(periodStart("all_time", at("2026-11-25T00:00:00Z"))).toBeNull();
    expect(resetsAt("all_time", at("2026-11-25T00:00:00Z"))).toBeNull();
    expect(periodKey("all_time", at("2026-11-25T00:00:00Z"))).toBe("all_time");
  });

  it("reads the clock in UTC whatever the offset it was written with", () => {
    // 01:30 in UTC+02:00 is 23:30 UTC of the day before: a Sunday, so the week before.
    expect(periodStart("daily", at("2026-11-30T01:30:00+02:00"))?.toISOString()).toBe("2026-11-29T00:00:00.000Z");
    expect(periodStart("weekly", at("2026-11-30T01:30:00+02:00"))?.toISOString()).toBe("2026-11-23T00:00:00.000Z");
  });
});

describe.each(backends)("$name store", (backend) => {
  /** Opened afresh for each test, like every other store of the test. */
  let store: CounterStore;
  beforeEach(() => {
    store = backend.open();
  });

  describe("the race", () => {
    it("admits exactly k of 300 concurrent reserves from 3 stores, and settles to the reported sum", async () => {
      const r = 100;
      const k = 37;
      const key = limit("daily", k * r, "key");
      const user = limit("monthly", 1_000_000, "user");
      const stores = [backend.open(), backend.open(), backend.open()];
      const now = at("2026-11-25T12:00:00Z");

      const results = await Promise.all(Array.from({ length: 300 }, (_, i) => stores[i % 3]!.reserve([user, key], r, now)));

      const admitted = results.flatMap((result) => (result.ok ? [result.reservation] : []));
      expect(admitted).toHaveLength(k);
      for (const result of results) if (!result.ok) expect(result.limit.id).toBe(key.id);
      // All or nothing: the refused 263 left no trace on the user's limit either.
      expect(await usage(store, key, now)).toEqual({ used: 0, reserved: k * r });
      expect(await usage(store, user, now)).toEqual({ used: 0, reserved: k * r });

      const reported = admitted.map((_, i) => r - (i % 11));
      await Promise.all(admitted.map((reservation, i) => stores[i % 3]!.settle(reservation, reported[i]!)));
      const sum = reported.reduce((a, b) => a + b, 0);
      expect(await usage(store, key, now)).toEqual({ used: sum, reserved: 0 });
      expect(await usage(store, user, now)).toEqual({ used: sum, reserved: 0 });
      expect(await durableUsed(key, now)).toBe(sum);
      expect(await durableUsed(user, now)).toBe(sum);
    });

    it("admits exactly k across 3 processes", async () => {
      const r = 50;
      const k = 23;
      const key = limit("weekly", k * r);
      const group = limit("all_time", 10_000_000, "group");
      const now = "2026-11-25T12:00:00.000Z";
      const workers = await startWorkers({ backend: backend.name, databaseUrl: database.url, redisUrl, keyPrefix, limits: [key, group], amount: r, count: 100, now });

      const granted = await workers.step<{ granted: number }>("reserve");
      expect(granted.reduce((sum, w) => sum + w.granted, 0)).toBe(k);
      expect(await usage(store, key, at(now))).toEqual({ used: 0, reserved: k * r });
      expect(await usage(store, group, at(now))).toEqual({ used: 0, reserved: k * r });

      const settled = (await workers.step<{ settled: number }>("settle")).reduce((sum, w) => sum + w.settled, 0);
      expect(await workers.exitCodes()).toEqual([0, 0, 0]);
      expect(await usage(store, key, at(now))).toEqual({ used: settled, reserved: 0 });
      expect(await usage(store, group, at(now))).toEqual({ used: settled, reserved: 0 });
      expect(await durableUsed(key, at(now))).toBe(settled);
    });
  });

  describe("period rollover", () => {
    it.each([
      // [period, first instant of a period, its last instant, the next period's first]
      ["daily", "2026-11-25T00:00:00.000Z", "2026-11-25T23:59:59.999Z", "2026-11-26T00:00:00.000Z", "2026-11-27T00:00:00.000Z"],
      ["weekly", "2026-11-23T00:00:00.000Z", "2026-11-29T23:59:59.999Z", "2026-11-30T00:00:00.000Z", "2026-12-07T00:00:00.000Z"],
      ["monthly", "2026-12-01T00:00:00.000Z", "2026-12-31T23:59:59.999Z", "2027-01-01T00:00:00.000Z", "2027-02-01T00:00:00.000Z"],
    ] as const)("%s: counts in the period, refuses until it ends, frees at its end", async (period, first, last, next, nextEnd) => {
      const l = limit(period, 1000);
      await store.settle(granted(await store.reserve([l], 400, at(first))), 400);

      const over = await store.reserve([l], 700, at(last));
      expect(over).toEqual({ ok: false, limit: l, resetsAt: at(next) });
      // Reserved at the last instant, settled only after the period ended: counts in its own period.
      const late = granted(await store.reserve([l], 600, at(last)));
      const fresh = granted(await store.reserve([l], 1000, at(next)));
      await store.settle(late, 600);

      expect(await store.reserve([l], 0, at(last))).toEqual({ ok: false, limit: l, resetsAt: at(next) });
      expect((await store.consumption([l], at(last))).get(l.id)).toEqual({ used: 1000, reserved: 0, periodStart: at(first), resetsAt: at(next) });
      expect((await store.consumption([l], at(next))).get(l.id)).toEqual({ used: 0, reserved: 1000, periodStart: at(next), resetsAt: at(nextEnd) });
      await store.release(fresh);
      expect(await usage(store, l, at(next))).toEqual({ used: 0, reserved: 0 });
    });

    it("all_time: never frees, and resets at no date", async () => {
      const l = limit("all_time", 1000);
      await store.settle(granted(await store.reserve([l], 1000, at("2026-01-01T00:00:00Z"))), 1000);
      const decadeLater = at("2036-06-15T00:00:00Z");
      expect(await store.reserve([l], 0, decadeLater)).toEqual({ ok: false, limit: l, resetsAt: null });
      expect((await store.consumption([l], decadeLater)).get(l.id)).toEqual({ used: 1000, reserved: 0, periodStart: null, resetsAt: null });
    });

    it("a limit of each period on one request: each counts in its own period", async () => {
      const daily = limit("daily", 500);
      const weekly = limit("weekly", 10_000);
      const monthly = limit("monthly", 10_000);
      const ever = limit("all_time", 10_000);
      const all = [ever, monthly, weekly, daily];
      const sunday = at("2026-11-29T20:00:00Z");
      const monday = at("2026-11-30T08:00:00Z");
      await store.settle(granted(await store.reserve(all, 500, sunday)), 500);
      expect(await store.reserve(all, 1, sunday)).toEqual({ ok: false, limit: daily, resetsAt: at("2026-11-30T00:00:00Z") });
      await store.settle(granted(await store.reserve(all, 300, monday)), 300);
      const onMonday = await store.consumption(all, monday);
      expect([daily, weekly, monthly, ever].map((l) => onMonday.get(l.id)!.used)).toEqual([300, 300, 800, 800]);
      const onSunday = await store.consumption(all, sunday);
      expect([daily, weekly, monthly, ever].map((l) => onSunday.get(l.id)!.used)).toEqual([500, 500, 800, 800]);
    });
  });

  describe("settle and release", () => {
    it("settles once per reservation, however often and however concurrently it is called", async () => {
      const l = limit("daily", 1000);
      const now = at("2026-11-25T10:00:00Z");
      const a = granted(await store.reserve([l], 100, now));
      await store.settle(a, 80);
      await store.settle(a, 80);
      await store.settle(a, 95);
      const b = granted(await store.reserve([l], 100, now));
      const other = backend.open();
      await Promise.all([store.settle(b, 70), other.settle(b, 70), store.settle(b, 70)]);
      expect(await usage(store, l, now)).toEqual({ used: 150, reserved: 0 });
      expect(await durableUsed(l, now)).toBe(150);
    });

    it("settles once when the same reservation is settled many times at once among others", async () => {
      const l = limit("daily", 100_000);
      const now = at("2026-11-25T10:00:00Z");
      const reservations = await Promise.all([1, 2, 3].map(async () => granted(await store.reserve([l], 1000, now))));
      await Promise.all(reservations.flatMap((reservation, i) => Array.from({ length: 5 }, () => store.settle(reservation, 100 * (i + 1)))));
      expect(await usage(store, l, now)).toEqual({ used: 600, reserved: 0 });
      expect(await durableUsed(l, now)).toBe(600);
    });

    it("release gives the reservation back, once, and a settle after it changes nothing", async () => {
      const l = limit("daily", 1000);
      const now = at("2026-11-25T10:00:00Z");
      const kept = granted(await store.reserve([l], 300, now));
      const dropped = granted(await store.reserve([l], 500, now));
      await store.release(dropped);
      await store.release(dropped);
      expect(await usage(store, l, now)).toEqual({ used: 0, reserved: 300 });
      await store.settle(dropped, 500);
      expect(await usage(store, l, now)).toEqual({ used: 0, reserved: 300 });
      await store.settle(kept, 250);
      expect(await usage(store, l, now)).toEqual({ used: 250, reserved: 0 });
    });

    it("settles more than was reserved: the tokens count, and the limit is then reached", async () => {
      const l = limit("daily", 200);
      const now = at("2026-11-25T10:00:00Z");
      await store.settle(granted(await store.reserve([l], 100, now)), 250);
      expect(await usage(store, l, now)).toEqual({ used: 250, reserved: 0 });
      expect(await durableUsed(l, now)).toBe(250);
      expect(await store.reserve([l], 0, now)).toEqual({ ok: false, limit: l, resetsAt: at("2026-11-26T00:00:00Z") });
    });

    it("rejects negative or fractional token counts", async () => {
      const l = limit("daily", 200);
      const now = at("2026-11-25T10:00:00Z");
      await expect(store.reserve([l], -1, now)).rejects.toThrow(RangeError);
      await expect(store.reserve([l], 1.5, now)).rejects.toThrow(RangeError);
      await expect(store.settle(granted(await store.reserve([l], 1, now)), -5)).rejects.toThrow(RangeError);
    });

    it("admits everything when no limit applies", async () => {
      const result = granted(await store.reserve([], 1_000_000, at("2026-11-25T10:00:00Z")));
      await store.settle(result, 5);
      await store.release(result);
    });
  });

  describe("durability and crashes", () => {
    it("keeps settled usage in PostgreSQL", async () => {
      const l = limit("monthly", 1000);
      const now = at("2026-11-25T10:00:00Z");
      await store.settle(granted(await store.reserve([l], 900, now)), 900);
      expect(await durableUsed(l, now)).toBe(900);
      if (backend.name === "redis") {
        // Redis loses the counter (restart, eviction): the next request seeds it from PostgreSQL.
        await deleteRedisKeys(`${keyPrefix}c:${l.id}:*`);
        expect(await usage(store, l, now)).toEqual({ used: 900, reserved: 0 });
        expect(await store.reserve([l], 200, now)).toEqual({ ok: false, limit: l, resetsAt: at("2026-12-01T00:00:00Z") });
        granted(await store.reserve([l], 100, now));
      }
    });

    // Only Redis can lag behind PostgreSQL; the PostgreSQL store has nothing to heal.
    if (backend.name === "redis") {
      it("heals a counter whose settle reached PostgreSQL but not Redis, when it sweeps the reservation", async () => {
        const t = at("2001-03-06T10:00:00Z");
        const l = limit("daily", 1000);
        const orphan = granted(await store.reserve([l], 500, t));
        // The process died after writing the usage durably and before telling Redis.
        await withPool((pool) => recordSettledUsage(pool, [{ reservation: orphan, tokens: 450 }], t));
        expect(await usage(store, l, t)).toEqual({ used: 0, reserved: 500 });
        expect(await store.sweep(new Date(t.getTime() + 16 * 60_000))).toBe(1);
        expect(await usage(store, l, t)).toEqual({ used: 450, reserved: 0 });
        expect(await store.reserve([l], 600, t)).toMatchObject({ ok: false });
      });
    }

    it("sweeps the reservations of a crashed process after 15 minutes, and a late settle still counts", async () => {
      // Years before every other test's clock, so that this sweep expires nothing of theirs.
      const t = at("2001-03-05T10:00:00Z");
      const l = limit("daily", 1000);
      const crashed = backend.open();
      const orphan = granted(await crashed.reserve([l], 500, t));
      expect(await store.reserve([l], 600, t)).toMatchObject({ ok: false });

      expect(await store.sweep(new Date(t.getTime() + 15 * 60_000))).toBe(0);
      expect(await usage(store, l, t)).toEqual({ used: 0, reserved: 500 });
      expect(await store.sweep(new Date(t.getTime() + 15 * 60_000 + 1))).toBe(1);
      expect(await usage(store, l, t)).toEqual({ used: 0, reserved: 0 });
      expect(await store.sweep(new Date(t.getTime() + 16 * 60_000))).toBe(0);

      const next = granted(await store.reserve([l], 600, t));
      await store.settle(orphan, 300); // the process had not crashed after all: its tokens count
      expect(await usage(store, l, t)).toEqual({ used: 300, reserved: 600 });
      await store.settle(next, 600);
      expect(await usage(store, l, t)).toEqual({ used: 900, reserved: 0 });
    });

    it("releases the reservations of a store whose lease lapsed, and not a live store's", async () => {
      // Sweeps here run at a clock years before every other test's, so that the age backstop
      // (15 minutes) takes nothing: only the leases decide.
      const sweepAt = at("2000-01-01T00:00:00Z");
      const t = at("2026-11-26T10:00:00Z");
      const l = limit("daily", 1000);
      const live = track(backend.name === "pg"
        ? new PgCounterStore({ databaseUrl: database.url })
        : new RedisCounterStore({ databaseUrl: database.url, redisUrl, keyPrefix }));
      const dying = track(backend.name === "pg"
        ? new PgCounterStore({ databaseUrl: database.url, leaseTtlMs: 50 })
        : new RedisCounterStore({ databaseUrl: database.url, redisUrl, keyPrefix, leaseTtlMs: 50 }));
      await live.renewLease();
      await dying.renewLease();
      const kept = granted(await live.reserve([l], 300, t));
      const orphan = granted(await dying.reserve([l], 500, t));
      expect(await usage(store, l, t)).toEqual({ used: 0, reserved: 800 });
      // The dying store renews no more; its lease (50 ms) lapses. The wait is a lower bound on
      // elapsed time, not a timing assertion.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await store.sweep(sweepAt)).toBe(1);
      expect(await usage(store, l, t)).toEqual({ used: 0, reserved: 300 });
      expect(await store.sweep(sweepAt)).toBe(0);
      // The store was not dead after all: its tokens still count, and nothing is given back twice.
      await dying.settle(orphan, 200);
      await live.settle(kept, 100);
      expect(await usage(store, l, t)).toEqual({ used: 300, reserved: 0 });
    });

    it("a store that closes gives its lease up: what it still held is released at the next sweep", async () => {
      const sweepAt = at("2000-01-01T00:00:00Z");
      const t = at("2026-11-26T11:00:00Z");
      const l = limit("daily", 1000);
      const closing = backend.name === "pg"
        ? new PgCounterStore({ databaseUrl: database.url })
        : new RedisCounterStore({ databaseUrl: database.url, redisUrl, keyPrefix });
      await closing.renewLease();
      granted(await closing.reserve([l], 400, t));
      await closing.close();
      expect(await usage(store, l, t)).toEqual({ used: 0, reserved: 400 });
      expect(await store.sweep(sweepAt)).toBe(1);
      expect(await usage(store, l, t)).toEqual({ used: 0, reserved: 0 });
    });

    it("keeps a finished reservation's row for an hour, then prunes it", async () => {
      const t = at("2001-03-07T10:00:00Z");
      const clocked = backend.open(() => t);
      const l = limit("daily", 1000);
      const reservation = granted(await clocked.reserve([l], 100, t));
      await clocked.settle(reservation, 100);
      const rows = () => withPool(async (pool) => (await pool.query("select 1 from usage_reservation where id = $1", [reservation.id])).rowCount);
      await clocked.sweep(new Date(t.getTime() + 60 * 60_000));
      expect(await rows()).toBe(1);
      await clocked.sweep(new Date(t.getTime() + 60 * 60_000 + 1));
      expect(await rows()).toBe(0);
      expect(await durableUsed(l, t)).toBe(100);
    });
  });

  describe("slices", () => {
    /** A store of its own that holds a live lease, as a gateway process's does. */
    async function leased(leaseTtlMs?: number): Promise<CounterStore> {
      const s = track(backend.name === "pg"
        ? new PgCounterStore({ databaseUrl: database.url, leaseTtlMs })
        : new RedisCounterStore({ databaseUrl: database.url, redisUrl, keyPrefix, leaseTtlMs }));
      await s.renewLease();
      return s;
    }

    it("grants the call's amount plus a share of the room left, in whole steps, never past `most`, down to one call at a time", async () => {
      // Two live leases (every other test's store has closed, and given its lease up): a grant
      // takes at most a quarter of the room left after the call.
      const [a, b] = [await leased(), await leased()];
      const l = limit("daily", 10_000);
      const now = at("2026-11-25T10:00:00Z");
      expect(granted(await a.reserve([l], 100, now, { most: 1_000_000, step: 100 })).amount).toBe(100 + 2400); // ⌊9,900 / 4⌋ = 2,475
      expect(granted(await b.reserve([l], 100, now, { most: 1_000_000, step: 100 })).amount).toBe(100 + 1800); // ⌊7,400 / 4⌋ = 1,850
      expect(granted(await a.reserve([l], 100, now, { most: 250, step: 100 })).amount).toBe(100 + 200); // most, in whole steps
      expect(granted(await a.reserve([l], 7, now)).amount).toBe(7); // no slice asked
      // 5,293 left: a call of 5,000 leaves 293, whose quarter is less than one step.
      expect(granted(await b.reserve([l], 5000, now, { most: 1_000_000, step: 5000 })).amount).toBe(5000);
      expect(granted(await a.reserve([l], 293, now, { most: 1_000_000, step: 1 })).amount).toBe(293);
      expect(await usage(store, l, now)).toEqual({ used: 0, reserved: 10_000 });
      // The refusal reads the call's amount alone: a slice never refuses a call that fits.
      expect(await b.reserve([l], 1, now, { most: 1_000_000, step: 1 })).toMatchObject({ ok: false });
    });

    it("takes the smallest room of the limits a slice covers", async () => {
      const a = await leased();
      const key = limit("daily", 100_000);
      const group = limit("monthly", 1_000, "group");
      const now = at("2026-11-25T10:00:00Z");
      const slice = granted(await a.reserve([key, group], 10, now, { most: 1_000_000, step: 10 }));
      expect(slice.amount).toBe(10 + 490); // one live lease: ⌊990 / 2⌋ = 495, the group's room
      expect(await usage(store, key, now)).toEqual({ used: 0, reserved: 500 });
    });

    it("carries a slice: counts its usage, keeps part, gives the rest back, once", async () => {
      const a = await leased();
      const l = limit("daily", 10_000);
      const now = at("2026-11-25T10:00:00Z");
      const slice = granted(await a.reserve([l], 1000, now));
      const next: Reservation = { ...slice, id: randomUUID(), amount: 400 };
      expect(await a.carry(slice, 300, next)).toBe(400);
      expect(await usage(store, l, now)).toEqual({ used: 300, reserved: 400 });
      // A repeat (its answer lost, say) changes nothing and answers the same.
      expect(await a.carry(slice, 300, next)).toBe(400);
      expect(await a.carry(slice, 999, { ...next, id: randomUUID() })).toBe(0);
      expect(await usage(store, l, now)).toEqual({ used: 300, reserved: 400 });
      const last: Reservation = { ...slice, id: randomUUID(), amount: 0 };
      expect(await a.carry(next, 250, last)).toBe(0);
      expect(await usage(store, l, now)).toEqual({ used: 550, reserved: 0 });
      // A call still in flight when nothing was kept settles on the successor.
      await a.settle(last, 20);
      expect(await usage(store, l, now)).toEqual({ used: 570, reserved: 0 });
      expect(await durableUsed(l, now)).toBe(570);
      await expect(a.carry(last, 0, { ...last, id: randomUUID(), amount: 1 })).rejects.toThrow(RangeError);
    });

    it("a slice the sweep took keeps nothing when carried, and its usage still counts", async () => {
      const sweepAt = at("2000-01-01T00:00:00Z");
      const t = at("2026-11-26T12:00:00Z");
      const l = limit("daily", 1000);
      await store.sweep(sweepAt); // what the tests before left to the sweep
      const dying = await leased(50);
      const slice = granted(await dying.reserve([l], 100, t, { most: 1000, step: 100 }));
      // Its lease (50 ms) lapses: a lower bound on elapsed time, not a timing assertion.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await store.sweep(sweepAt)).toBe(1);
      expect(await usage(store, l, t)).toEqual({ used: 0, reserved: 0 });
      const next: Reservation = { ...slice, id: randomUUID(), amount: slice.amount - 100 };
      expect(await dying.carry(slice, 100, next)).toBe(0);
      expect(await usage(store, l, t)).toEqual({ used: 100, reserved: 0 });
      await dying.settle(next, 40);
      expect(await usage(store, l, t)).toEqual({ used: 140, reserved: 0 });
      expect(await durableUsed(l, t)).toBe(140);
    });

    it("what a slice keeps stays under its process's lease: swept once that lease lapses", async () => {
      const sweepAt = at("2000-01-01T00:00:00Z");
      const t = at("2026-11-26T13:00:00Z");
      const l = limit("daily", 1000);
      await store.sweep(sweepAt);
      const dying = await leased(50);
      const slice = granted(await dying.reserve([l], 300, t));
      expect(await dying.carry(slice, 100, { ...slice, id: randomUUID(), amount: 150 })).toBe(150);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await store.sweep(sweepAt)).toBe(1);
      expect(await usage(store, l, t)).toEqual({ used: 100, reserved: 0 });
    });
  });

  describe("refusals", () => {
    it("refuses even an amount of 0 once used has reached the limit", async () => {
      const l = limit("daily", 100);
      const now = at("2026-11-25T10:00:00Z");
      await store.settle(granted(await store.reserve([l], 100, now)), 99);
      granted(await store.reserve([l], 0, now));
      granted(await store.reserve([l], 1, now));
      const full = limit("daily", 100);
      await store.settle(granted(await store.reserve([full], 100, now)), 100);
      expect(await store.reserve([full], 0, now)).toEqual({ ok: false, limit: full, resetsAt: at("2026-11-26T00:00:00Z") });
      const zero = limit("weekly", 0);
      expect(await store.reserve([zero], 0, now)).toEqual({ ok: false, limit: zero, resetsAt: at("2026-11-30T00:00:00Z") });
    });

    it("changes nothing when one limit refuses, and names the first in key, user, group; daily … all_time order", async () => {
      const now = at("2026-11-25T10:00:00Z");
      const keyLimit = limit("monthly", 1000, "key");
      const userDaily = limit("daily", 100, "user");
      const userMonthly = limit("monthly", 100, "user");
      const group = limit("daily", 100, "group");
      expect(await store.reserve([group, userMonthly, keyLimit, userDaily], 150, now)).toEqual({
        ok: false,
        limit: userDaily,
        resetsAt: at("2026-11-26T00:00:00Z"),
      });
      expect(await store.reserve([group, userMonthly, keyLimit], 150, now)).toEqual({ ok: false, limit: userMonthly, resetsAt: at("2026-12-01T00:00:00Z") });
      expect(await store.reserve([group, keyLimit], 150, now)).toEqual({ ok: false, limit: group, resetsAt: at("2026-11-26T00:00:00Z") });
      const usages = await store.consumption([keyLimit, userDaily, userMonthly, group], now);
      for (const l of [keyLimit, userDaily, userMonthly, group]) expect(usages.get(l.id)).toMatchObject({ used: 0, reserved: 0 });
      const ok = granted(await store.reserve([group, userMonthly, keyLimit, userDaily, keyLimit], 100, now));
      expect(ok.limits.map((l) => l.id)).toEqual([keyLimit.id, userDaily.id, userMonthly.id, group.id]);
    });
  });
});

interface Worker {
  child: ChildProcessWithoutNullStreams;
  lines: AsyncIterator<string>;
  stderr(): string;
}

/**
 * Three `node` processes, each with a store of its own, driven in lock step by lines on stdin:
 * `step(line)` sends the line to every worker and reads the next line each answers.
 */
async function startWorkers(orders: WorkerOrders) {
  const script = path.join(import.meta.dirname, "support/usage-counter-worker.ts");
  const workers: Worker[] = [0, 1, 2].map(() => {
    const child = spawn(process.execPath, [script], { env: { ...process.env, WORKER_ORDERS: JSON.stringify(orders) }, stdio: ["pipe", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    return { child, lines: createInterface({ input: child.stdout })[Symbol.asyncIterator](), stderr: () => stderr };
  });
  const next = async (worker: Worker): Promise<string> => {
    const line = await worker.lines.next();
    if (line.done) throw new Error(`worker ended early: ${worker.stderr()}`);
    return line.value;
  };
  for (const line of await Promise.all(workers.map(next))) expect(line).toBe("ready");
  return {
    async step<T>(line: string): Promise<T[]> {
      for (const worker of workers) worker.child.stdin.write(`${line}\n`);
      return (await Promise.all(workers.map(next))).map((answer) => JSON.parse(answer) as T);
    },
    exitCodes(): Promise<(number | null)[]> {
      for (const worker of workers) worker.child.stdin.end();
      return Promise.all(workers.map(({ child }) => (child.exitCode !== null ? child.exitCode : once(child, "exit").then(([code]) => code as number | null))));
    },
  };
}
