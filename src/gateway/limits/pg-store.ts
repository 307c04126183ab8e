import { randomUUID } from "node:crypto";
import type pg from "pg";
import { defaultDatabaseDeadlines, type DatabaseDeadlines } from "../../db/deadlines.ts";
import { createPool } from "../../db/pools.ts";
import { allTimeKey, periodKey, periodStart, resetsAt } from "./periods.ts";
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
 * Usage counters in PostgreSQL (tables of Migration20261121030000, leases of
 * Migration20261124020000), correct across any number of
 * gateway processes on one database: every change is one statement, which is one transaction,
 * and every statement that holds more than one counter row locks them in one order (limit id,
 * then period start), so two statements never wait on each other in a cycle.
 */

export interface PgCounterStoreOptions {
  databaseUrl: string;
  poolSize?: number;
  /** The defaults of src/db/deadlines.ts unless given. */
  deadlines?: DatabaseDeadlines;
  /** See `defaultReservationTtlMs`. */
  reservationTtlMs?: number;
  /** See `defaultLeaseTtlMs`. */
  leaseTtlMs?: number;
  /** See `defaultFinishedRetentionMs`. */
  finishedRetentionMs?: number;
  /** Stamps when a reservation finished; settle and release take no `now`. */
  clock?: () => Date;
}

/**
 * How long a finished (settled, released, expired) reservation's row is kept: an hour. It is what
 * makes a repeated settle a no-op, and the longest legitimate gap between two settles of one
 * request is far shorter; the rows are one per request, so they are not kept for long.
 */
export const defaultFinishedRetentionMs = 60 * 60_000;

/** How the tables spell a period key: all-time counters start at '-infinity'. */
export function pgPeriod(key: string): string {
  return key === allTimeKey ? "-infinity" : key;
}

/** A counter's period key as periods.ts spells it: ISO 8601 in UTC with milliseconds, or all_time. */
const periodKeySql = (column: string) =>
  `case when ${column} = '-infinity' then '${allTimeKey}' else to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') end`;

/**
 * Locks the counters (in key order), checks every limit against the rule in types.ts, and only
 * if all pass adds the amount (with a slice's extra, `SliceAsk`: $9 most, $10 step) to each and
 * records the reservation: all or nothing, in one statement. A row another statement changed while we waited for its lock is read at its newest
 * version (READ COMMITTED re-reads locked rows), and the UPDATE below re-reads it the same way,
 * so `reserved` never loses an increment. Counters missing for the period are reported as
 * `found` short of the number asked; the caller creates them and asks again.
 *
 * The commit does not wait for the WAL flush (synchronous_commit off, for this statement only):
 * the counter rows stay locked until the commit, so every request on one key would otherwise wait
 * out a disk flush in turn. A reservation matters only while its request is in flight, and a
 * PostgreSQL crash loses at most the last fraction of a second of them: in-flight requests, which
 * go unaccounted as the durability promise allows. Settles keep synchronous commits.
 */
const reserveSql = `
  with async_commit as materialized (
    select set_config('synchronous_commit', 'off', true)
  ),
  wanted as (
    select * from unnest($1::uuid[], $2::timestamptz[], $3::bigint[]) as w(limit_id, period_start, token_limit)
  ),
  locked as materialized (
    select c.limit_id, c.period_start, c.used, c.reserved, w.token_limit
    from usage_counter c
    join wanted w on w.limit_id = c.limit_id and w.period_start = c.period_start
    order by c.limit_id, c.period_start
    for update of c
  ),
  verdict as materialized (
    select count(*)::int as found,
      coalesce(array_agg(limit_id::text) filter (where used >= token_limit or used + reserved + $4::bigint > token_limit), '{}') as refused,
      min(token_limit - used - reserved - $4::bigint) as room
    from locked, async_commit
  ),
  holders as materialized (
    select greatest(count(*), 1)::bigint as n from usage_lease where $9::bigint > 0 and expires_at > clock_timestamp()
  ),
  grant_size as materialized (
    select $4::bigint + case when $9::bigint <= 0 or $10::bigint <= 0 or coalesce(v.room, 0) <= 0 then 0
      else least($9::bigint, v.room / (${sliceRoomDivisor} * h.n)) / $10::bigint * $10::bigint end as amount
    from verdict v, holders h
  ),
  granted as (
    update usage_counter c set reserved = c.reserved + g.amount
    from locked l, verdict v, grant_size g
    where c.limit_id = l.limit_id and c.period_start = l.period_start
      and v.found = cardinality($1::uuid[]) and cardinality(v.refused) = 0
  ),
  recorded as (
    insert into usage_reservation (id, workspace_id, limit_ids, period_starts, amount, state, date_created, lease_id)
    select $5::uuid, $6::uuid, $1::uuid[], $2::timestamptz[], g.amount, 'reserved', $7::timestamptz, $8::uuid from verdict v, grant_size g
    where v.found = cardinality($1::uuid[]) and cardinality(v.refused) = 0
  )
  select v.found, v.refused, g.amount::text as granted from verdict v, grant_size g`;

/** Sorted, so that two processes creating the same counters insert them in one order. */
const createCountersSql = `
  insert into usage_counter (limit_id, period_start, workspace_id)
  select w.limit_id, w.period_start, $3::uuid from unnest($1::uuid[], $2::timestamptz[]) as w(limit_id, period_start)
  order by w.limit_id, w.period_start
  on conflict do nothing`;

/**
 * Settles ($3 = 'settled') or releases ($3 = 'released', $2 = 0) a reservation that is still open
 * or was expired by the sweep. The reservation row is locked first: a concurrent duplicate waits,
 * then finds it finished and changes nothing. An expired one gives back no reservation (the sweep
 * did) but still counts its tokens.
 */
const finishSql = `
  with r as materialized (
    select id, state, amount, limit_ids, period_starts from usage_reservation
    where id = $1::uuid and state in ('reserved', 'expired')
    for update
  ),
  finished as (
    update usage_reservation u set state = $3::text, tokens = $2::bigint, date_finished = $4::timestamptz from r where u.id = r.id
  ),
  locked as materialized (
    select c.limit_id, c.period_start, case when r.state = 'reserved' then r.amount else 0 end as give_back
    from r
    cross join unnest(r.limit_ids, r.period_starts) as w(limit_id, period_start)
    join usage_counter c on c.limit_id = w.limit_id and c.period_start = w.period_start
    where $2::bigint > 0 or r.state = 'reserved'
    order by c.limit_id, c.period_start
    for update of c
  ),
  counted as (
    update usage_counter c set used = c.used + $2::bigint, reserved = greatest(c.reserved - l.give_back, 0)
    from locked l where c.limit_id = l.limit_id and c.period_start = l.period_start
  )
  select state from r`;

/**
 * Settles a slice's reservation ($1) as $2 and keeps $5 of it reserved under a new reservation
 * ($4, under lease $6), in one statement (`CounterStore.carry`). A reservation the sweep expired
 * keeps nothing; one already finished (a repeat) changes nothing, and the answer is what its
 * successor holds.
 */
const carrySql = `
  with r as materialized (
    select id, workspace_id, state, amount, limit_ids, period_starts from usage_reservation
    where id = $1::uuid and state in ('reserved', 'expired')
    for update
  ),
  kept as materialized (
    select case when r.state = 'reserved' then least($5::bigint, r.amount) else 0 end as amount from r
  ),
  finished as (
    update usage_reservation u set state = 'settled', tokens = $2::bigint, date_finished = $3::timestamptz from r where u.id = r.id
  ),
  locked as materialized (
    select c.limit_id, c.period_start, case when r.state = 'reserved' then r.amount - k.amount else 0 end as give_back
    from r
    cross join kept k
    cross join unnest(r.limit_ids, r.period_starts) as w(limit_id, period_start)
    join usage_counter c on c.limit_id = w.limit_id and c.period_start = w.period_start
    where $2::bigint > 0 or r.state = 'reserved'
    order by c.limit_id, c.period_start
    for update of c
  ),
  counted as (
    update usage_counter c set used = c.used + $2::bigint, reserved = greatest(c.reserved - l.give_back, 0)
    from locked l where c.limit_id = l.limit_id and c.period_start = l.period_start
  ),
  carried as (
    insert into usage_reservation (id, workspace_id, limit_ids, period_starts, amount, state, date_created, lease_id)
    select $4::uuid, r.workspace_id, r.limit_ids, r.period_starts, k.amount, 'reserved', $3::timestamptz, $6::uuid from r cross join kept k
    on conflict (id) do nothing
  )
  select coalesce((select amount from kept), (select amount from usage_reservation where id = $4::uuid and state = 'reserved'), 0)::text as kept`;

/**
 * Expires a batch of reservations made under a lease that has lapsed (by PostgreSQL's clock), or
 * open since before $1, and gives their amounts back. Rows a settle holds are skipped (SKIP
 * LOCKED): that settle finishes them.
 */
const sweepSql = `
  with lapsed as materialized (
    select id from usage_lease where expires_at < clock_timestamp()
  ),
  expired as materialized (
    select id, amount, limit_ids, period_starts from usage_reservation
    where state = 'reserved' and (date_created < $1::timestamptz or lease_id in (select id from lapsed))
    order by date_created
    limit $2::int
    for update skip locked
  ),
  marked as (
    update usage_reservation u set state = 'expired', date_finished = $3::timestamptz from expired e where u.id = e.id
  ),
  per_counter as (
    select w.limit_id, w.period_start, sum(e.amount) as amount
    from expired e cross join unnest(e.limit_ids, e.period_starts) as w(limit_id, period_start)
    group by w.limit_id, w.period_start
  ),
  locked as materialized (
    select c.limit_id, c.period_start, p.amount from usage_counter c
    join per_counter p on c.limit_id = p.limit_id and c.period_start = p.period_start
    order by c.limit_id, c.period_start
    for update of c
  ),
  released as (
    update usage_counter c set reserved = greatest(c.reserved - l.amount, 0)
    from locked l where c.limit_id = l.limit_id and c.period_start = l.period_start
  )
  select count(*)::int as expired from expired`;

const pruneSql = `
  delete from usage_reservation where id in (
    select id from usage_reservation where state <> 'reserved' and date_finished < $1::timestamptz limit $2::int
  )`;

/**
 * Takes the lease for $2 ms from now, by PostgreSQL's clock (a lease the sweep already pruned is
 * made again).
 */
const renewLeaseSql = `
  insert into usage_lease (id, expires_at) values ($1::uuid, clock_timestamp() + $2::bigint * interval '1 millisecond')
  on conflict (id) do update set expires_at = excluded.expires_at`;

/** Lets the lease lapse now: the next sweep of any process releases what it still holds. */
const giveUpLeaseSql = `update usage_lease set expires_at = clock_timestamp() where id = $1::uuid`;

/**
 * Forgets leases that lapsed before $1 (the age backstop's cutoff): any reservation still open
 * under them is older than the cutoff, so the backstop takes it.
 */
const pruneLeasesSql = `delete from usage_lease where expires_at < least($1::timestamptz, clock_timestamp())`;

const consumptionSql = `
  select c.limit_id::text as limit_id, ${periodKeySql("c.period_start")} as period, c.used, c.reserved
  from usage_counter c
  join unnest($1::uuid[], $2::timestamptz[]) as w(limit_id, period_start)
    on c.limit_id = w.limit_id and c.period_start = w.period_start`;

/**
 * Durable settled usage for the Redis store, whose reservations live in Redis, for a batch of
 * settles at once: records each reservation as settled (its id makes a repeat a no-op), and adds
 * the tokens of those recorded now to each counter's `used`, creating counters as needed, in one
 * statement. A batch takes each hot counter's row lock once, not once per settle. Returns the
 * counters it changed, with their `used` afterwards.
 */
const recordSettledSql = `
  with batch as (
    select * from jsonb_to_recordset($1::jsonb)
      as b(id uuid, workspace_id uuid, limit_ids uuid[], period_starts timestamptz[], amount bigint, tokens bigint)
  ),
  recorded as (
    insert into usage_reservation (id, workspace_id, limit_ids, period_starts, amount, state, tokens, date_created, date_finished)
    select id, workspace_id, limit_ids, period_starts, amount, 'settled', tokens, $2::timestamptz, $2::timestamptz from batch
    on conflict (id) do nothing
    returning workspace_id, limit_ids, period_starts, tokens
  ),
  deltas as (
    select w.limit_id, w.period_start, r.workspace_id, sum(r.tokens) as tokens
    from recorded r cross join unnest(r.limit_ids, r.period_starts) as w(limit_id, period_start)
    group by w.limit_id, w.period_start, r.workspace_id
  )
  insert into usage_counter as c (limit_id, period_start, workspace_id, used)
  select limit_id, period_start, workspace_id, tokens from deltas
  order by limit_id, period_start
  on conflict (limit_id, period_start) do update set used = c.used + excluded.used
  returning c.limit_id::text as limit_id, ${periodKeySql("c.period_start")} as period, c.used`;

/** The Redis store's record of a release, so that a settle after it changes nothing, as here. */
const recordReleasedSql = `
  insert into usage_reservation (id, workspace_id, limit_ids, period_starts, amount, state, tokens, date_created, date_finished)
  values ($1::uuid, $2::uuid, $3::uuid[], $4::timestamptz[], $5::bigint, 'released', 0, $6::timestamptz, $6::timestamptz)
  on conflict (id) do nothing`;

const sweepBatch = 500;
const maxSweepBatches = 20;
const maxReserveAttempts = 3;

export class PgCounterStore implements CounterStore {
  readonly pool: pg.Pool;
  /** The lease this store's reservations are made under. */
  readonly leaseId = randomUUID();
  readonly #leaseTtlMs: number;
  readonly #reservationTtlMs: number;
  readonly #finishedRetentionMs: number;
  readonly #clock: () => Date;

  constructor(options: PgCounterStoreOptions) {
    this.pool = createPool({ databaseUrl: options.databaseUrl, max: options.poolSize ?? 10, deadlines: options.deadlines ?? defaultDatabaseDeadlines });
    this.#reservationTtlMs = options.reservationTtlMs ?? defaultReservationTtlMs;
    this.#leaseTtlMs = options.leaseTtlMs ?? defaultLeaseTtlMs;
    this.#finishedRetentionMs = options.finishedRetentionMs ?? defaultFinishedRetentionMs;
    this.#clock = options.clock ?? (() => new Date());
  }

  async renewLease(): Promise<void> {
    await this.pool.query(renewLeaseSql, [this.leaseId, this.#leaseTtlMs]);
  }

  async reserve(limits: readonly UsageLimit[], amount: number, now: Date, slice?: SliceAsk): Promise<ReserveResult> {
    assertTokens("amount", amount);
    const ordered = orderLimits(limits);
    const periodStarts = ordered.map((limit) => periodKey(limit.period, now));
    const id = randomUUID();
    if (ordered.length === 0) return { ok: true, reservation: { id, limits: ordered, amount, periodStarts } };
    const workspaceId = workspaceOf(ordered);
    const ids = ordered.map((limit) => limit.id);
    const starts = periodStarts.map(pgPeriod);
    const tokenLimits = ordered.map((limit) => limit.tokenLimit);
    // Counters exist after the first request of each period; the retry is for the first ones.
    for (let attempt = 0; attempt < maxReserveAttempts; attempt++) {
      const { rows } = await this.pool.query<{ found: number; refused: string[]; granted: string }>(reserveSql, [
        ids, starts, tokenLimits, amount, id, workspaceId, now, this.leaseId, slice?.most ?? 0, slice?.step ?? 0,
      ]);
      const { found, refused, granted } = rows[0]!;
      if (found === ordered.length) {
        const first = ordered.find((limit) => refused.includes(limit.id));
        return first
          ? { ok: false, limit: first, resetsAt: resetsAt(first.period, now) }
          : { ok: true, reservation: { id, limits: ordered, amount: Number(granted), periodStarts } };
      }
      await this.pool.query(createCountersSql, [ids, starts, workspaceId]);
    }
    throw new Error("usage counters vanished while reserving");
  }

  async settle(reservation: Reservation, actualTokens: number): Promise<void> {
    assertTokens("actualTokens", actualTokens);
    if (reservation.limits.length === 0) return;
    await this.pool.query(finishSql, [reservation.id, actualTokens, "settled", this.#clock()]);
  }

  async carry(reservation: Reservation, actualTokens: number, next: Reservation): Promise<number> {
    assertCarry(reservation, actualTokens, next);
    if (reservation.limits.length === 0) return next.amount;
    const { rows } = await this.pool.query<{ kept: string }>(carrySql, [reservation.id, actualTokens, this.#clock(), next.id, next.amount, this.leaseId]);
    return Number(rows[0]!.kept);
  }

  async release(reservation: Reservation): Promise<void> {
    if (reservation.limits.length === 0) return;
    await this.pool.query(finishSql, [reservation.id, 0, "released", this.#clock()]);
  }

  async consumption(limits: readonly UsageLimit[], now: Date): Promise<Map<string, LimitConsumption>> {
    const ordered = orderLimits(limits);
    const { rows } = await this.pool.query<{ limit_id: string; used: string; reserved: string }>(consumptionSql, [
      ordered.map((limit) => limit.id),
      ordered.map((limit) => pgPeriod(periodKey(limit.period, now))),
    ]);
    const byId = new Map(rows.map((row) => [row.limit_id, row]));
    const result = new Map<string, LimitConsumption>();
    for (const limit of ordered) {
      const row = byId.get(limit.id);
      result.set(limit.id, {
        used: Number(row?.used ?? 0),
        reserved: Number(row?.reserved ?? 0),
        periodStart: periodStart(limit.period, now),
        resetsAt: resetsAt(limit.period, now),
      });
    }
    return result;
  }

  async sweep(now: Date): Promise<number> {
    const cutoff = new Date(now.getTime() - this.#reservationTtlMs);
    let expired = 0;
    for (let batch = 0; batch < maxSweepBatches; batch++) {
      const { rows } = await this.pool.query<{ expired: number }>(sweepSql, [cutoff, sweepBatch, now]);
      expired += rows[0]!.expired;
      if (rows[0]!.expired < sweepBatch) break;
    }
    await pruneFinished(this.pool, new Date(now.getTime() - this.#finishedRetentionMs));
    await this.pool.query(pruneLeasesSql, [cutoff]);
    return expired;
  }

  async close(): Promise<void> {
    // Best effort: a lease that is not given up lapses by itself.
    await this.pool.query(giveUpLeaseSql, [this.leaseId]).catch(() => undefined);
    await this.pool.end();
  }
}

/** The key of a counter in the maps below. */
export const counterId = (limitId: string, period: string) => `${limitId} ${period}`;

/**
 * The Redis store's durable half: records a batch of settles in PostgreSQL, each once per
 * reservation id. Returns the settled `used` afterwards of every counter of the batch's
 * reservations (read back for those the batch did not change), by `counterId`.
 */
export async function recordSettledUsage(
  pool: pg.Pool,
  settles: readonly { reservation: Reservation; tokens: number }[],
  at: Date,
): Promise<Map<string, number>> {
  const batch = settles.map(({ reservation, tokens }) => ({
    id: reservation.id,
    workspace_id: workspaceOf(reservation.limits),
    limit_ids: reservation.limits.map((limit) => limit.id),
    period_starts: reservation.periodStarts.map(pgPeriod),
    amount: reservation.amount,
    tokens,
  }));
  const { rows } = await pool.query<{ limit_id: string; period: string; used: string }>(recordSettledSql, [JSON.stringify(batch), at]);
  const used = new Map(rows.map((row) => [counterId(row.limit_id, row.period), Number(row.used)]));
  const unchanged = new Map<string, [string, string]>();
  for (const { reservation } of settles) {
    reservation.limits.forEach((limit, i) => {
      const id = counterId(limit.id, reservation.periodStarts[i]!);
      if (!used.has(id)) unchanged.set(id, [limit.id, reservation.periodStarts[i]!]);
    });
  }
  if (unchanged.size > 0) {
    const pairs = [...unchanged.values()];
    const read = await settledUsage(pool, pairs.map(([id]) => id), pairs.map(([, period]) => pgPeriod(period)));
    for (const [id, value] of read) used.set(id, value);
  }
  return used;
}

/** Settled `used` of each (limit id, period key) that has a counter, by `counterId`. */
export async function settledUsage(pool: pg.Pool, limitIds: readonly string[], pgPeriods: readonly string[]): Promise<Map<string, number>> {
  const { rows } = await pool.query<{ limit_id: string; period: string; used: string }>(consumptionSql, [limitIds, pgPeriods]);
  return new Map(rows.map((row) => [counterId(row.limit_id, row.period), Number(row.used)]));
}

/** Deletes the rows of reservations that finished before `before`, in bounded batches. */
export async function pruneFinished(pool: pg.Pool, before: Date): Promise<void> {
  for (let batch = 0; batch < maxSweepBatches; batch++) {
    const { rowCount } = await pool.query(pruneSql, [before, sweepBatch]);
    if ((rowCount ?? 0) < sweepBatch) break;
  }
}

/** Records a release of the Redis store, once per reservation id. */
export async function recordReleased(pool: pg.Pool, reservation: Reservation, at: Date): Promise<void> {
  await pool.query(recordReleasedSql, [
    reservation.id, workspaceOf(reservation.limits), reservation.limits.map((limit) => limit.id),
    reservation.periodStarts.map(pgPeriod), reservation.amount, at,
  ]);
}
