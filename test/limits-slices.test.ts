import { randomBytes, randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createOrm } from "../src/db/orm.ts";
import { PgCounterStore } from "../src/gateway/limits/pg-store.ts";
import { RedisCounterStore } from "../src/gateway/limits/redis-store.ts";
import type { Refusal } from "../src/gateway/limits/slice.ts";
import { Slices, type Hold } from "../src/gateway/limits/slices.ts";
import type { CounterStore, LimitPeriod, Reservation, SliceAsk, UsageLimit } from "../src/gateway/limits/types.ts";
import { createLogger } from "../src/platform/logger.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { dropRedisKeys } from "./support/redis.ts";

/**
 * Slices of the limits' budgets (src/gateway/limits/slice.ts, slices.ts), over both stores: calls
 * are admitted from what a process holds, without a round trip; a call that does not fit asks the
 * store for what it lacks, and only the store's refusal refuses it; usage reaches the store with
 * each flush, and idle room goes back. Flushes are called by the tests (no background timer),
 * except in the races, where they run every millisecond to mix them with everything else.
 */

const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const keyPrefix = `warden-test:${randomBytes(6).toString("hex")}:`;
const logger = createLogger("silent");
let database: TestDatabase;
let workspaceId: string;
const opened: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  const orm = await createOrm({ databaseUrl: database.url, entities: [] });
  await orm.close();
  workspaceId = randomUUID();
  const pool = new pg.Pool({ connectionString: database.url, max: 1 });
  try {
    await pool.query(
      `insert into workspace (id, name, slug, invite_code, status, date_created, date_updated)
       values ($1, 'Slices', $2, 'invite', 'active', now(), now())`,
      [workspaceId, `slices-${randomBytes(4).toString("hex")}`],
    );
  } finally {
    await pool.end();
  }
});

afterEach(async () => {
  // Slices first (they write to their stores), then the stores.
  for (const item of opened.splice(0).reverse()) await item.close();
});

afterAll(async () => {
  await dropRedisKeys(redisUrl, keyPrefix);
  await database?.drop();
});

/** A store that counts what it is asked, and can be told to fail. */
class Watched implements CounterStore {
  readonly inner: CounterStore;
  readonly reserves: { amount: number; slice: SliceAsk | undefined }[] = [];
  carries = 0;
  settles = 0;
  failWrites = false;

  constructor(inner: CounterStore) {
    this.inner = inner;
  }

  reserve(limits: readonly UsageLimit[], amount: number, now: Date, slice?: SliceAsk) {
    this.reserves.push({ amount, slice });
    return this.inner.reserve(limits, amount, now, slice);
  }
  carry(reservation: Reservation, actualTokens: number, next: Reservation) {
    this.carries++;
    if (this.failWrites) return Promise.reject(new Error("the counters are away"));
    return this.inner.carry(reservation, actualTokens, next);
  }
  settle(reservation: Reservation, actualTokens: number) {
    this.settles++;
    if (this.failWrites) return Promise.reject(new Error("the counters are away"));
    return this.inner.settle(reservation, actualTokens);
  }
  release(reservation: Reservation) {
    return this.inner.release(reservation);
  }
  consumption(limits: readonly UsageLimit[], now: Date) {
    return this.inner.consumption(limits, now);
  }
  renewLease() {
    return this.inner.renewLease();
  }
  sweep(now: Date) {
    return this.inner.sweep(now);
  }
  close() {
    return this.inner.close();
  }
}

const backends = [
  { name: "pg", open: () => new PgCounterStore({ databaseUrl: database.url }) },
  { name: "redis", open: () => new RedisCounterStore({ databaseUrl: database.url, redisUrl, keyPrefix }) },
] as const;

function limit(tokenLimit: number, period: LimitPeriod = "daily"): UsageLimit {
  return { id: randomUUID(), workspaceId, scope: "key", subjectId: randomUUID(), period, unit: "tokens", tokenLimit };
}

const now = new Date("2026-11-25T10:00:00Z");

async function taken(slices: Slices, limits: UsageLimit[], amount: number, at = now): Promise<Hold | Refusal> {
  return await slices.take(limits, amount, at);
}

function held(result: Hold | Refusal): Hold {
  if (!result.ok) throw new Error(`refused by the ${result.limit.period} limit`);
  return result;
}

describe.each(backends)("slices over the $name store", (backend) => {
  /** A process: a store with a live lease, watched, and its slices (flushed by the test unless `intervalMs`). */
  async function process_(intervalMs = 0): Promise<{ store: Watched; slices: Slices }> {
    const store = new Watched(backend.open());
    await store.renewLease();
    // The lease is renewed once, for a minute, longer than any test takes.
    const slices = new Slices(store, logger, { leaseTtlMs: 60_000, intervalMs });
    slices.leaseRenewed(performance.now());
    opened.push(store, slices);
    return { store, slices };
  }

  async function usage(store: CounterStore, l: UsageLimit, at = now): Promise<{ used: number; reserved: number }> {
    const { used, reserved } = (await store.consumption([l], at)).get(l.id)!;
    return { used, reserved };
  }

  it("admits calls from what the process holds, and asks the store less and less often", async () => {
    const { store, slices } = await process_();
    const l = limit(1_000_000);
    for (let i = 0; i < 100; i++) {
      const hold = held(await taken(slices, [l], 10));
      hold.slice.end(hold.amount, 6);
    }
    // Each grant asks for twice what the slice admitted so far: 1, 2, 4, … calls' worth.
    expect(store.reserves.length).toBeLessThanOrEqual(8);
    expect(store.reserves.map((r) => r.amount).every((amount) => amount <= 10)).toBe(true);
    // Nothing reaches the store before a flush but the slice itself.
    expect((await usage(store, l)).used).toBe(0);
    await slices.flush();
    const afterFlush = await usage(store, l);
    expect(afterFlush.used).toBe(600);
    // The slice was busy: it keeps its free room. A second flush with no call in between finds it
    // idle and gives it back.
    await slices.flush();
    expect(await usage(store, l)).toEqual({ used: 600, reserved: 0 });
  });

  it("a call that does not fit asks the store for what it lacks; only the store's refusal refuses, for room another process holds", async () => {
    const a = await process_();
    const b = await process_();
    const l = limit(1000);
    // A holds 600 it does not use (the call ended having used nothing).
    const idle = held(await taken(a.slices, [l], 600));
    idle.slice.end(idle.amount, 0);
    // B cannot have 500: the store has 400 that no process holds.
    const refused = await taken(b.slices, [l], 500);
    expect(refused).toEqual({ ok: false, limit: l, resetsAt: new Date("2026-11-26T00:00:00Z") });
    expect(b.store.reserves.at(-1)?.amount).toBe(500);
    // … and 400 it can.
    const fits = held(await taken(b.slices, [l], 400));
    // A's room goes back once A has been idle for a whole flush interval.
    await a.slices.flush();
    expect(await usage(a.store, l)).toEqual({ used: 0, reserved: 1000 });
    await a.slices.flush();
    expect(await usage(a.store, l)).toEqual({ used: 0, reserved: 400 });
    fits.slice.end(fits.amount, 300);
    // B holds 100 of its own: a call of 500 asks the store for the 400 it lacks.
    const topped = held(await taken(b.slices, [l], 500));
    expect(b.store.reserves.at(-1)?.amount).toBe(400);
    topped.slice.end(topped.amount, 500);
    await b.slices.flush();
    expect(await usage(b.store, l)).toEqual({ used: 800, reserved: 0 });
  });

  it("admits a call of 0 only from room it holds: a spent limit refuses it", async () => {
    const { store, slices } = await process_();
    const l = limit(100);
    const all = held(await taken(slices, [l], 100));
    all.slice.end(all.amount, 100);
    expect(await taken(slices, [l], 0)).toMatchObject({ ok: false });
    await slices.flush();
    expect(await usage(store, l)).toEqual({ used: 100, reserved: 0 });
    const other = limit(100);
    const some = held(await taken(slices, [other], 60));
    some.slice.end(some.amount, 10);
    const reservesBefore = store.reserves.length;
    held(await taken(slices, [other], 0));
    expect(store.reserves.length).toBe(reservesBefore);
  });

  it("counts each period's calls in that period", async () => {
    const { store, slices } = await process_();
    const l = limit(1000);
    const tomorrow = new Date("2026-11-26T10:00:00Z");
    const today = held(await taken(slices, [l], 100));
    const next = held(await taken(slices, [l], 100, tomorrow));
    expect(next.slice).not.toBe(today.slice);
    today.slice.end(today.amount, 70);
    next.slice.end(next.amount, 20);
    await slices.flush(true);
    expect(await usage(store, l)).toEqual({ used: 70, reserved: 0 });
    expect(await usage(store, l, tomorrow)).toEqual({ used: 20, reserved: 0 });
  });

  it("moves the same list of limits to the next period's slice at the period's end, and keeps it within a period", async () => {
    const { slices } = await process_();
    // One array for every call, as the limit step hands it for a key until the next snapshot.
    const limits = [limit(1000), limit(5000, "monthly")];
    const today = held(await taken(slices, limits, 10));
    const later = held(await taken(slices, limits, 10, new Date(now.getTime() + 3_600_000)));
    const tomorrow = held(await taken(slices, limits, 10, new Date("2026-11-26T10:00:00Z")));
    expect(later.slice).toBe(today.slice);
    expect(tomorrow.slice).not.toBe(today.slice);
    // The same calls, with a new array from a new snapshot where a limit changed: a slice of its own.
    const raised = [{ ...limits[0]!, tokenLimit: 2000 }, limits[1]!];
    expect(held(await taken(slices, raised, 10)).slice).not.toBe(today.slice);
    expect(held(await taken(slices, [...limits], 10)).slice).toBe(today.slice);
  });

  it("keeps a flush the store failed, and writes it once, when the store answers again", async () => {
    const { store, slices } = await process_();
    const l = limit(10_000);
    const first = held(await taken(slices, [l], 100));
    first.slice.end(first.amount, 40);
    store.failWrites = true;
    await slices.flush(); // logged, not thrown
    // The 60 the first call did not use are still held: a call that fits needs no store.
    const second = held(await taken(slices, [l], 50));
    second.slice.end(second.amount, 50);
    expect((await usage(store, l)).used).toBe(0);
    store.failWrites = false;
    await slices.flush(); // the failed flush, as it was
    await slices.flush(); // the usage since
    await slices.flush(); // idle: the room goes back
    expect(await usage(store, l)).toEqual({ used: 90, reserved: 0 });
  });

  it("fails every waiting call when the store does not answer a grant", async () => {
    const { store, slices } = await process_();
    const l = limit(10_000);
    const broken = new Error("no answer");
    store.reserve = () => Promise.reject(broken);
    const results = await Promise.allSettled([1, 2, 3].map(() => slices.take([l], 10, now)));
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
  });

  it("trusts held room only while its lease is surely live: past that, calls ask the store, and a renewal after a gap forgets what was held", async () => {
    const store = new Watched(backend.open());
    await store.renewLease();
    const slices = new Slices(store, logger, { leaseTtlMs: 60_000, intervalMs: 0 });
    opened.push(store, slices);
    const l = limit(10_000);
    // Renewed so long ago that three quarters of the TTL have passed: nothing is trusted.
    slices.leaseRenewed(performance.now() - 50_000);
    const first = held(await taken(slices, [l], 100));
    first.slice.end(first.amount, 10);
    held(await taken(slices, [l], 50)).slice.end(50, 50);
    expect(store.reserves.map((r) => r.amount)).toEqual([100, 50]);
    // Renewed now, after that gap: what the slice held is forgotten (and goes back with the next flush).
    slices.leaseRenewed(performance.now());
    held(await taken(slices, [l], 50)).slice.end(50, 0);
    expect(store.reserves.map((r) => r.amount)).toEqual([100, 50, 50]);
    // Live, without a gap: the room the last grant left is used without asking.
    slices.leaseRenewed(performance.now());
    held(await taken(slices, [l], 50)).slice.end(50, 0);
    expect(store.reserves).toHaveLength(3);
    await slices.flush(true);
    expect(await usage(store, l)).toEqual({ used: 60, reserved: 0 });
  });

  it("gives back what no call holds, and writes the last usage, when it closes", async () => {
    const { store, slices } = await process_();
    const l = limit(10_000);
    for (let i = 0; i < 5; i++) {
      const hold = held(await taken(slices, [l], 100));
      hold.slice.end(hold.amount, 30);
    }
    await slices.close();
    expect(await usage(store, l)).toEqual({ used: 150, reserved: 0 });
  });

  describe("races: three processes, flushing every millisecond", () => {
    /** `count` calls spread over the three processes, each holding its room for a few random milliseconds. */
    async function race(l: UsageLimit, count: number, amount: number, used: (i: number) => number) {
      const processes = [await process_(1), await process_(1), await process_(1)];
      let inUse = 0; // what admitted calls hold or used, as the store must account it
      let most = 0;
      let admitted = 0;
      let spent = 0;
      await Promise.all(
        Array.from({ length: count }, async (_, i) => {
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 5));
          const result = await taken(processes[i % 3]!.slices, [l], amount);
          if (!result.ok) return;
          admitted++;
          inUse += amount;
          most = Math.max(most, inUse);
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 10));
          inUse -= amount - used(i);
          spent += used(i);
          result.slice.end(result.amount, used(i));
        }),
      );
      for (const p of processes) await p.slices.close();
      return { admitted, most, spent, store: processes[0]!.store };
    }

    it.each([1, 2, 3])("lets exactly k calls of one size through (round %i)", async () => {
      const l = limit(40 * 100);
      const { admitted, store } = await race(l, 300, 100, () => 100);
      expect(admitted).toBe(40);
      expect(await usage(store, l)).toEqual({ used: 4000, reserved: 0 });
    });

    it.each([1, 2, 3])("never lets calls that use less than they reserve pass the limit together (round %i)", async () => {
      const l = limit(5000);
      const { admitted, most, spent, store } = await race(l, 400, 100, (i) => 20 + (i % 60));
      expect(most).toBeLessThanOrEqual(5000);
      expect(admitted).toBeGreaterThan(50);
      expect(await usage(store, l)).toEqual({ used: spent, reserved: 0 });
    });
  });
});
