import { createHash, randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import type pg from "pg";
import { defaultDatabaseDeadlines, type DatabaseDeadlines } from "../../db/deadlines.ts";
import { createPool } from "../../db/pools.ts";
import { periodKey, periodStart, resetsAt } from "./periods.ts";
import {
  counterId,
  defaultFinishedRetentionMs,
  pgPeriod,
  pruneFinished,
  recordReleased,
  recordSettledUsage,
  settledUsage,
} from "./pg-store.ts";
import {
  assertCarry,
  assertTokens,
  defaultLeaseTtlMs,
  defaultReservationTtlMs,
  orderLimits,
  sliceRoomDivisor,
  workspaceOf,
  type CounterStore,
  type LimitConsumption,
  type Reservation,
  type ReserveResult,
  type SliceAsk,
  type UsageLimit,
} from "./types.ts";

/**
 * Usage counters in Redis, with the PostgreSQL store's semantics. Redis holds the live counters
 * (a hash {used, reserved} per limit and period) and the open reservations; PostgreSQL holds
 * settled usage durably (usage_counter.used), written by every settle before Redis is told.
 *
 * Each change is one Lua script, which Redis runs with nothing else in between: that is the
 * atomicity. Redis's `used` is a cache of PostgreSQL's: it only ever moves up to a value
 * PostgreSQL returned (max, never +=). Settled usage only grows, so the largest value seen is the
 * newest, whatever order settles and seeds reach Redis in; a counter missing from Redis (first
 * use, expiry, a Redis restart) is seeded from PostgreSQL the same way. What Redis can lose is
 * `reserved`, the in-flight requests, which the requirement allows; a process that dies between
 * PostgreSQL and Redis leaves its reservation to the sweep, which raises those counters to
 * PostgreSQL's usage.
 *
 * Settles of one process are written to PostgreSQL in batches (group commit): admission never
 * waits for PostgreSQL, and settling is bounded by PostgreSQL's commits on the hottest counter.
 *
 * Leases (see `defaultLeaseTtlMs`): a store's lease is a key that expires unless renewed, the
 * store's id in the set of leases, and the set of reservations open under it. The lease sweep
 * releases the reservations of every lease whose key has expired.
 *
 * Standalone Redis: the sweep scripts reach reservation and lease keys they read from sets.
 */

export interface RedisCounterStoreOptions {
  redisUrl: string;
  /** Where settled usage is written durably (tables of Migration20261121030000). */
  databaseUrl: string;
  /** Prefix of every key; tests use their own. */
  keyPrefix?: string;
  poolSize?: number;
  /** The defaults of src/db/deadlines.ts unless given. */
  deadlines?: DatabaseDeadlines;
  /** See `defaultReservationTtlMs`. */
  reservationTtlMs?: number;
  /** See `defaultLeaseTtlMs`. */
  leaseTtlMs?: number;
  /** See `defaultFinishedRetentionMs`: the PostgreSQL rows that make a repeated settle a no-op. */
  finishedRetentionMs?: number;
  /** Stamps settled reservations in PostgreSQL; settle takes no `now`. */
  clock?: () => Date;
}

interface Script {
  lua: string;
  sha: string;
}

function script(lua: string): Script {
  return { lua, sha: createHash("sha1").update(lua).digest("hex") };
}

/**
 * KEYS: counters 1..n, the reservation, the open set, the set of the store's lease, the set of leases.
 * ARGV: amount, id, createdMs, reservation key ttl, payload, a slice's most and step (`SliceAsk`;
 * 0 for none), the lease key prefix, then for counter i at 8+3i-2 … 8+3i: tokenLimit, counter
 * ttl, seed ('' when the caller has none). A slice's holders are the leases whose key is live.
 * Returns {0, granted} granted (the amount with a slice's extra), {1, i…} counters missing (ask
 * again with seeds), {2, i} refused by counter i.
 * Seeds first (max with what is there), then checks every counter, then changes any: all or nothing.
 */
const reserveScript = script(`
  local n = #KEYS - 4
  local amount = tonumber(ARGV[1])
  local missing = {}
  for i = 1, n do
    local ttl, seed = ARGV[8 + 3 * i - 1], ARGV[8 + 3 * i]
    local used = redis.call('HGET', KEYS[i], 'used')
    if not used then
      if seed == '' then
        missing[#missing + 1] = i
      else
        redis.call('HSET', KEYS[i], 'used', seed, 'reserved', 0)
        redis.call('PEXPIRE', KEYS[i], ttl)
      end
    elseif seed ~= '' and tonumber(seed) > tonumber(used) then
      redis.call('HSET', KEYS[i], 'used', seed)
    end
  end
  if #missing > 0 then return {1, unpack(missing)} end
  local room = nil
  for i = 1, n do
    local limit = tonumber(ARGV[8 + 3 * i - 2])
    local c = redis.call('HMGET', KEYS[i], 'used', 'reserved')
    local used, reserved = tonumber(c[1]), tonumber(c[2] or '0')
    if used >= limit or used + reserved + amount > limit then return {2, i} end
    local left = limit - used - reserved - amount
    if room == nil or left < room then room = left end
  end
  local most, step = tonumber(ARGV[6]), tonumber(ARGV[7])
  local extra = 0
  if most > 0 and step > 0 and room > 0 then
    local holders = 0
    for _, lease in ipairs(redis.call('SMEMBERS', KEYS[n + 4])) do
      holders = holders + redis.call('EXISTS', ARGV[8] .. lease)
    end
    holders = math.max(holders, 1)
    extra = math.min(most, math.floor(room / (${sliceRoomDivisor} * holders)))
    extra = extra - extra % step
  end
  local granted = string.format('%d', amount + extra)
  local payload = ARGV[5]
  if extra > 0 then
    local p = cjson.decode(payload)
    p.giveBack = '-' .. granted
    payload = cjson.encode(p)
  end
  for i = 1, n do
    redis.call('HINCRBY', KEYS[i], 'reserved', granted)
    redis.call('PEXPIRE', KEYS[i], ARGV[8 + 3 * i - 1])
  end
  redis.call('SET', KEYS[n + 1], payload, 'PX', ARGV[4])
  redis.call('ZADD', KEYS[n + 2], ARGV[3], ARGV[2])
  redis.call('SADD', KEYS[n + 3], ARGV[2])
  redis.call('PEXPIRE', KEYS[n + 3], ARGV[4])
  return {0, granted}`);

/**
 * A slice's carry (`CounterStore.carry`). KEYS: counters 1..n, the reservation, the open set, the
 * set of the store's lease, the successor. ARGV: id, the successor's id, what it keeps, its
 * createdMs, reservation key ttl, its payload when it keeps that, its payload when it keeps 0,
 * then for counter i at 7+2i-1, 7+2i: settled used from PostgreSQL ('' when unknown), counter ttl.
 * The reservation key is the idempotency: only the call that deletes it gives back what is not
 * kept; when the sweep took it, the successor keeps 0; when the successor exists already (a
 * repeat), nothing changes. Returns what the successor holds.
 */
const carryScript = script(`
  local n = #KEYS - 4
  local payload = redis.call('GET', KEYS[n + 1])
  if not payload then
    local existing = redis.call('GET', KEYS[n + 4])
    if existing then return -tonumber(cjson.decode(existing).giveBack) end
  end
  local keep, giveBack = 0, 0
  if payload then
    keep = tonumber(ARGV[3])
    giveBack = -tonumber(cjson.decode(payload).giveBack) - keep
    redis.call('DEL', KEYS[n + 1])
  end
  redis.call('ZREM', KEYS[n + 2], ARGV[1])
  redis.call('SREM', KEYS[n + 3], ARGV[1])
  for i = 1, n do
    local settled, ttl = ARGV[7 + 2 * i - 1], ARGV[7 + 2 * i]
    local used = redis.call('HGET', KEYS[i], 'used')
    if used then
      if giveBack > 0 and redis.call('HINCRBY', KEYS[i], 'reserved', string.format('%d', -giveBack)) < 0 then
        redis.call('HSET', KEYS[i], 'reserved', 0)
      end
      if settled ~= '' and tonumber(settled) > tonumber(used) then redis.call('HSET', KEYS[i], 'used', settled) end
      redis.call('PEXPIRE', KEYS[i], ttl)
    elseif settled ~= '' then
      redis.call('HSET', KEYS[i], 'used', settled, 'reserved', string.format('%d', keep))
      redis.call('PEXPIRE', KEYS[i], ttl)
    end
  end
  redis.call('SET', KEYS[n + 4], payload and ARGV[6] or ARGV[7], 'PX', ARGV[5])
  redis.call('ZADD', KEYS[n + 2], ARGV[4], ARGV[2])
  redis.call('SADD', KEYS[n + 3], ARGV[2])
  redis.call('PEXPIRE', KEYS[n + 3], ARGV[5])
  return keep`);

/**
 * Settle or release. KEYS: counters 1..n, the reservation, the open set, the set of the store's lease.
 * ARGV: id, -amount, then for counter i at 2+2i-1, 2+2i: settled used from PostgreSQL ('' for a
 * release), counter ttl.
 * The reservation key is the idempotency of `reserved`: only the call that deletes it gives the
 * amount back (none if the sweep took it). `used` moves up to PostgreSQL's value, or seeds a
 * missing counter with it.
 */
const finishScript = script(`
  local n = #KEYS - 3
  local live = redis.call('DEL', KEYS[n + 1])
  redis.call('ZREM', KEYS[n + 2], ARGV[1])
  redis.call('SREM', KEYS[n + 3], ARGV[1])
  for i = 1, n do
    local settled, ttl = ARGV[2 + 2 * i - 1], ARGV[2 + 2 * i]
    local used = redis.call('HGET', KEYS[i], 'used')
    if used then
      if live == 1 and redis.call('HINCRBY', KEYS[i], 'reserved', ARGV[2]) < 0 then
        redis.call('HSET', KEYS[i], 'reserved', 0)
      end
      if settled ~= '' and tonumber(settled) > tonumber(used) then redis.call('HSET', KEYS[i], 'used', settled) end
    elseif settled ~= '' then
      redis.call('HSET', KEYS[i], 'used', settled, 'reserved', 0)
      redis.call('PEXPIRE', KEYS[i], ttl)
    end
  end
  return live`);

/**
 * Lua for the sweeps: gives back the amount of the reservation whose key is `key`, if it is still
 * open, deletes it, and appends its payload to `swept`.
 */
const releaseLua = `
  local function release(key, swept)
    local payload = redis.call('GET', key)
    if not payload then return end
    local r = cjson.decode(payload)
    for _, counter in ipairs(r.counters) do
      if redis.call('EXISTS', counter) == 1 and redis.call('HINCRBY', counter, 'reserved', r.giveBack) < 0 then
        redis.call('HSET', counter, 'reserved', 0)
      end
    end
    redis.call('DEL', key)
    swept[#swept + 1] = payload
  end`;

/**
 * KEYS: the open set. ARGV: cutoffMs (exclusive), batch size, reservation key prefix.
 * Gives back the amounts of reservations opened before the cutoff and never finished. Returns
 * how many it took, then the payloads of those whose key was still there.
 */
const sweepScript = script(`${releaseLua}
  local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1], 'LIMIT', 0, ARGV[2])
  local swept = {#ids}
  for _, id in ipairs(ids) do
    release(ARGV[3] .. id, swept)
    redis.call('ZREM', KEYS[1], id)
  end
  return swept`);

/**
 * KEYS: the set of leases, the open set. ARGV: lease key prefix, lease set prefix, reservation
 * key prefix, batch size. For every lease whose key has expired, gives back the amounts of up to
 * a batch of the reservations still open under it, and forgets the lease once none is left.
 * Returns how many it took, then their payloads.
 */
const leaseSweepScript = script(`${releaseLua}
  local swept = {0}
  local budget = tonumber(ARGV[4])
  for _, lease in ipairs(redis.call('SMEMBERS', KEYS[1])) do
    if budget <= 0 then break end
    if redis.call('EXISTS', ARGV[1] .. lease) == 0 then
      local set = ARGV[2] .. lease
      local ids = redis.call('SPOP', set, budget)
      budget = budget - #ids
      for _, id in ipairs(ids) do
        release(ARGV[3] .. id, swept)
        redis.call('ZREM', KEYS[2], id)
      end
      if redis.call('EXISTS', set) == 0 then redis.call('SREM', KEYS[1], lease) end
    end
  end
  swept[1] = #swept - 1
  return swept`);

/** KEYS: the lease, the set of leases. ARGV: ttl (ms), lease id. Takes the lease for ttl from now. */
const renewLeaseScript = script(`
  redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
  redis.call('SADD', KEYS[2], ARGV[2])
  return 0`);

/**
 * KEYS: counters. ARGV: PostgreSQL's settled used of each. Raises `used` of the counters Redis
 * holds to it (a missing counter is seeded when next used).
 */
const raiseScript = script(`
  for i = 1, #KEYS do
    local used = redis.call('HGET', KEYS[i], 'used')
    if used and tonumber(ARGV[i]) > tonumber(used) then redis.call('HSET', KEYS[i], 'used', ARGV[i]) end
  end
  return 0`);

/** What the sweep finds of a reservation: its counters, and the same as (limit id, period key). */
interface Payload {
  counters: string[];
  giveBack: string;
  limitIds: string[];
  periods: string[];
}

/** Counters outlive their period by a day, so that late settles of its reservations find them. */
const counterGraceMs = 86_400_000;
/** All-time counters expire when unused this long, and are seeded again when next used. */
const allTimeIdleMs = 30 * 86_400_000;
/** A reservation key outlives its sweep deadline by this much, so that Redis frees it even if no sweep runs. */
const reservationKeyGraceMs = 86_400_000;
/**
 * How long, from `now` on, the counter of `limit`'s period that `inPeriod` falls in should live.
 * A relative TTL, not an absolute PEXPIREAT: the caller's clock decides periods, and Redis's may
 * differ from it (by skew, or by years under a test's clock).
 */
function counterTtl(limit: UsageLimit, inPeriod: Date, now: Date): number {
  const end = resetsAt(limit.period, inPeriod);
  return end === null ? allTimeIdleMs : Math.max(end.getTime() - now.getTime(), 0) + counterGraceMs;
}

const sweepBatch = 500;
const maxSweepBatches = 20;
const maxReserveAttempts = 3;
const maxSettleBatch = 200;

interface PendingSettle {
  reservation: Reservation;
  tokens: number;
  resolve(used: Map<string, number>): void;
  reject(err: unknown): void;
}

/**
 * Group commit of settled usage: settles that arrive while a write is in flight go together in
 * the next one, so a hot counter (a group's, say) is locked once per batch rather than once per
 * request. Each settle still resolves only after its own write committed.
 */
class SettledUsageWriter {
  readonly #pool: pg.Pool;
  readonly #clock: () => Date;
  readonly #queue: PendingSettle[] = [];
  #writing = false;

  constructor(pool: pg.Pool, clock: () => Date) {
    this.#pool = pool;
    this.#clock = clock;
  }

  /** Settled `used` afterwards of the reservation's counters (and maybe others), by `counterId`. */
  record(reservation: Reservation, tokens: number): Promise<Map<string, number>> {
    const { promise, resolve, reject } = Promise.withResolvers<Map<string, number>>();
    this.#queue.push({ reservation, tokens, resolve, reject });
    if (!this.#writing) void this.#drain();
    return promise;
  }

  async #drain(): Promise<void> {
    this.#writing = true;
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0, maxSettleBatch);
      try {
        const used = await recordSettledUsage(this.#pool, batch, this.#clock());
        for (const settle of batch) settle.resolve(used);
      } catch (err) {
        // One bad settle (its workspace deleted, say) must not fail the others: write each alone.
        if (batch.length === 1) batch[0]!.reject(err);
        else await Promise.all(batch.map((settle) => recordSettledUsage(this.#pool, [settle], this.#clock()).then(settle.resolve, settle.reject)));
      }
    }
    this.#writing = false;
  }
}

export class RedisCounterStore implements CounterStore {
  readonly redis: Redis;
  readonly pool: pg.Pool;
  /** The lease this store's reservations are made under. */
  readonly leaseId = randomUUID();
  readonly #leaseTtlMs: number;
  readonly #prefix: string;
  readonly #reservationTtlMs: number;
  readonly #finishedRetentionMs: number;
  readonly #clock: () => Date;
  readonly #writer: SettledUsageWriter;

  constructor(options: RedisCounterStoreOptions) {
    // Fail a command after two reconnection attempts rather than queueing a request for long, and
    // one that a frozen Redis never answers within the same bounds as a database statement.
    const deadlines = options.deadlines ?? defaultDatabaseDeadlines;
    this.redis = new Redis(options.redisUrl, {
      maxRetriesPerRequest: 2,
      connectTimeout: deadlines.connectTimeoutMs || undefined,
      commandTimeout: deadlines.queryTimeoutMs || undefined,
    });
    this.redis.on("error", () => undefined); // reconnects by itself; commands report their own failures
    this.pool = createPool({ databaseUrl: options.databaseUrl, max: options.poolSize ?? 10, deadlines });
    this.#prefix = options.keyPrefix ?? "warden:usage:";
    this.#reservationTtlMs = options.reservationTtlMs ?? defaultReservationTtlMs;
    this.#leaseTtlMs = options.leaseTtlMs ?? defaultLeaseTtlMs;
    this.#finishedRetentionMs = options.finishedRetentionMs ?? defaultFinishedRetentionMs;
    this.#clock = options.clock ?? (() => new Date());
    this.#writer = new SettledUsageWriter(this.pool, this.#clock);
  }

  async renewLease(): Promise<void> {
    await this.#run(renewLeaseScript, [this.#leaseKey(this.leaseId), this.#leasesKey()], [this.#leaseTtlMs, this.leaseId]);
  }

  async reserve(limits: readonly UsageLimit[], amount: number, now: Date, slice?: SliceAsk): Promise<ReserveResult> {
    assertTokens("amount", amount);
    const ordered = orderLimits(limits);
    const periodStarts = ordered.map((limit) => periodKey(limit.period, now));
    const id = randomUUID();
    if (ordered.length === 0) return { ok: true, reservation: { id, limits: ordered, amount, periodStarts } };
    workspaceOf(ordered); // refuses limits of several workspaces now, not at settle
    const counters = this.#counterKeys(ordered, periodStarts);
    const ttls = ordered.map((limit) => counterTtl(limit, now, now));
    const payload = this.#payload(counters, amount, ordered, periodStarts);
    let seeds: string[] = ordered.map(() => "");
    for (let attempt = 0; attempt < maxReserveAttempts; attempt++) {
      const args: (string | number)[] = [amount, id, now.getTime(), this.#reservationKeyTtlMs(), payload, slice?.most ?? 0, slice?.step ?? 0, this.#leaseKey("")];
      ordered.forEach((limit, i) => args.push(limit.tokenLimit, ttls[i]!, seeds[i]!));
      const keys = [...counters, this.#reservationKey(id), this.#openKey(), this.#leaseSetKey(this.leaseId), this.#leasesKey()];
      const reply = (await this.#run(reserveScript, keys, args)) as number[];
      if (reply[0] === 0) return { ok: true, reservation: { id, limits: ordered, amount: Number(reply[1]), periodStarts } };
      if (reply[0] === 2) {
        const limit = ordered[reply[1]! - 1]!;
        return { ok: false, limit, resetsAt: resetsAt(limit.period, now) };
      }
      // Missing counters: seed them from PostgreSQL's settled usage (0 if it has none) and ask again.
      const missing = reply.slice(1).map((i) => i - 1);
      const settled = await settledUsage(
        this.pool,
        missing.map((i) => ordered[i]!.id),
        missing.map((i) => pgPeriod(periodStarts[i]!)),
      );
      seeds = ordered.map(() => "");
      for (const i of missing) seeds[i] = String(settled.get(counterId(ordered[i]!.id, periodStarts[i]!)) ?? 0);
    }
    throw new Error("usage counters vanished from Redis while reserving");
  }

  async carry(reservation: Reservation, actualTokens: number, next: Reservation): Promise<number> {
    assertCarry(reservation, actualTokens, next);
    if (reservation.limits.length === 0) return next.amount;
    // Durable first, as in settle: if PostgreSQL fails, the reservation stays as it was.
    const settled = await this.#writer.record(reservation, actualTokens);
    const now = this.#clock();
    const counters = this.#counterKeys(reservation.limits, reservation.periodStarts);
    const args: (string | number)[] = [
      reservation.id,
      next.id,
      next.amount,
      now.getTime(),
      this.#reservationKeyTtlMs(),
      this.#payload(counters, next.amount, next.limits, next.periodStarts),
      this.#payload(counters, 0, next.limits, next.periodStarts),
    ];
    reservation.limits.forEach((limit, i) => args.push(...this.#settledArgs(settled, reservation, limit, i, now)));
    const keys = [...counters, this.#reservationKey(reservation.id), this.#openKey(), this.#leaseSetKey(this.leaseId), this.#reservationKey(next.id)];
    return Number(await this.#run(carryScript, keys, args));
  }

  async settle(reservation: Reservation, actualTokens: number): Promise<void> {
    assertTokens("actualTokens", actualTokens);
    if (reservation.limits.length === 0) return;
    // Durable first: if PostgreSQL fails, the reservation stays open (and is swept), and nothing counts twice.
    await this.#finish(reservation, await this.#writer.record(reservation, actualTokens));
  }

  async release(reservation: Reservation): Promise<void> {
    if (reservation.limits.length === 0) return;
    // Recorded, so that a settle after a release changes nothing, as in the PostgreSQL store.
    await recordReleased(this.pool, reservation, this.#clock());
    await this.#finish(reservation, undefined);
  }

  async consumption(limits: readonly UsageLimit[], now: Date): Promise<Map<string, LimitConsumption>> {
    const ordered = orderLimits(limits);
    const keys = ordered.map((limit) => this.#counterKey(limit.id, periodKey(limit.period, now)));
    const pipeline = this.redis.pipeline();
    for (const key of keys) pipeline.hmget(key, "used", "reserved");
    const replies = (await pipeline.exec()) ?? [];
    const live = replies.map(([err, value]) => {
      if (err) throw err;
      return value as (string | null)[];
    });
    // Counters Redis does not hold (yet) have no reservations; their settled usage is PostgreSQL's.
    const absent = ordered.filter((_, i) => live[i]?.[0] == null);
    const settled = absent.length === 0 ? new Map<string, number>() : await settledUsage(
      this.pool,
      absent.map((limit) => limit.id),
      absent.map((limit) => pgPeriod(periodKey(limit.period, now))),
    );
    const result = new Map<string, LimitConsumption>();
    ordered.forEach((limit, i) => {
      const [used, reserved] = live[i] ?? [];
      result.set(limit.id, {
        used: used == null ? (settled.get(counterId(limit.id, periodKey(limit.period, now))) ?? 0) : Number(used),
        reserved: Number(reserved ?? 0),
        periodStart: periodStart(limit.period, now),
        resetsAt: resetsAt(limit.period, now),
      });
    });
    return result;
  }

  async sweep(now: Date): Promise<number> {
    let expired = 0;
    for (let batch = 0; batch < maxSweepBatches; batch++) {
      const [count, ...payloads] = (await this.#run(
        leaseSweepScript,
        [this.#leasesKey(), this.#openKey()],
        [this.#leaseKey(""), this.#leaseSetKey(""), this.#reservationKey(""), sweepBatch],
      )) as [number, ...string[]];
      expired += count;
      await this.#raiseFromPostgres(payloads.map((payload) => JSON.parse(payload) as Payload));
      if (count < sweepBatch) break;
    }
    const cutoff = now.getTime() - this.#reservationTtlMs;
    for (let batch = 0; batch < maxSweepBatches; batch++) {
      const [count, ...payloads] = (await this.#run(sweepScript, [this.#openKey()], [cutoff, sweepBatch, this.#reservationKey("")])) as [number, ...string[]];
      expired += count;
      await this.#raiseFromPostgres(payloads.map((payload) => JSON.parse(payload) as Payload));
      if (count < sweepBatch) break;
    }
    await pruneFinished(this.pool, new Date(now.getTime() - this.#finishedRetentionMs));
    return expired;
  }

  async close(): Promise<void> {
    // Best effort: a lease that is not given up lapses by itself.
    await this.redis.del(this.#leaseKey(this.leaseId)).catch(() => undefined);
    await this.redis.quit();
    await this.pool.end();
  }

  /**
   * A swept reservation may be one whose process died between writing its usage to PostgreSQL
   * and telling Redis: bring those counters up to PostgreSQL's settled usage.
   */
  async #raiseFromPostgres(swept: Payload[]): Promise<void> {
    const counters = new Map<string, { key: string; limitId: string; period: string }>();
    for (const payload of swept) {
      payload.limitIds.forEach((limitId, i) => counters.set(counterId(limitId, payload.periods[i]!), { key: payload.counters[i]!, limitId, period: payload.periods[i]! }));
    }
    if (counters.size === 0) return;
    const all = [...counters.values()];
    const settled = await settledUsage(this.pool, all.map((c) => c.limitId), all.map((c) => pgPeriod(c.period)));
    const known = all.filter((c) => settled.has(counterId(c.limitId, c.period)));
    if (known.length === 0) return;
    await this.#run(raiseScript, known.map((c) => c.key), known.map((c) => settled.get(counterId(c.limitId, c.period))!));
  }

  async #finish(reservation: Reservation, settled: Map<string, number> | undefined): Promise<void> {
    const args: (string | number)[] = [reservation.id, String(-reservation.amount)];
    const now = this.#clock();
    reservation.limits.forEach((limit, i) => args.push(...this.#settledArgs(settled, reservation, limit, i, now)));
    const keys = [...this.#counterKeys(reservation.limits, reservation.periodStarts), this.#reservationKey(reservation.id), this.#openKey(), this.#leaseSetKey(this.leaseId)];
    await this.#run(finishScript, keys, args);
  }

  /**
   * A counter's settled used from PostgreSQL ('' when unknown, or for a release), and its TTL: a
   * counter seeded here belongs to the reservation's period, which may have ended.
   */
  #settledArgs(settled: Map<string, number> | undefined, reservation: Reservation, limit: UsageLimit, i: number, now: Date): [string, number] {
    const start = reservation.periodStarts[i]!;
    const used = settled?.get(counterId(limit.id, start));
    return [used === undefined ? "" : String(used), counterTtl(limit, limit.period === "all_time" ? now : new Date(start), now)];
  }

  /** What the sweep finds of a reservation (`Payload`). */
  #payload(counters: string[], amount: number, limits: readonly UsageLimit[], periods: readonly string[]): string {
    return JSON.stringify({ counters, giveBack: String(-amount), limitIds: limits.map((limit) => limit.id), periods: [...periods] } satisfies Payload);
  }

  #reservationKeyTtlMs(): number {
    return this.#reservationTtlMs + reservationKeyGraceMs;
  }

  /** Runs a script by its digest, sending its text only when Redis does not have it cached. */
  async #run(s: Script, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await this.redis.evalsha(s.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith("NOSCRIPT")) throw err;
      return await this.redis.eval(s.lua, keys.length, ...keys, ...args);
    }
  }

  #counterKeys(limits: readonly UsageLimit[], periodStarts: readonly string[]): string[] {
    return limits.map((limit, i) => this.#counterKey(limit.id, periodStarts[i]!));
  }

  #counterKey(limitId: string, period: string): string {
    return `${this.#prefix}c:${limitId}:${period}`;
  }

  #reservationKey(id: string): string {
    return `${this.#prefix}r:${id}`;
  }

  #openKey(): string {
    return `${this.#prefix}open`;
  }

  #leaseKey(id: string): string {
    return `${this.#prefix}lease:${id}`;
  }

  /** The reservations open under a lease. */
  #leaseSetKey(id: string): string {
    return `${this.#prefix}lr:${id}`;
  }

  #leasesKey(): string {
    return `${this.#prefix}leases`;
  }
}
