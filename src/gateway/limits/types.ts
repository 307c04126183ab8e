/**
 * Usage-limit counters: the contract both stores (PostgreSQL, Redis) keep.
 *
 * A request reserves, at admission, its counted input plus its max_tokens against every limit
 * that applies; it settles at completion with what the provider reported. Because the check and
 * the reservation are one atomic step, concurrent requests cannot collectively pass a limit.
 *
 * The rule for "reached": a reservation of `amount` is refused by a limit when
 *   used >= tokenLimit                      (the limit is spent: even amount 0 is refused), or
 *   used + reserved + amount > tokenLimit   (admitting it could overshoot).
 * So a limit of 0 refuses everything, and a settle that reports more than was reserved can push
 * `used` past the limit (the tokens were spent), which refuses everything until the period ends.
 */

export type LimitScope = "key" | "user" | "group";
export type LimitPeriod = "daily" | "weekly" | "monthly" | "all_time";
/** What a limit counts: tokens (input plus output), micro-dollars of cost, or requests. */
export type LimitUnit = "tokens" | "usd" | "requests";

/** Limit ids and workspace ids are UUIDs, like every id in the schema. */
export interface UsageLimit {
  id: string;
  workspaceId: string;
  scope: LimitScope;
  subjectId: string;
  period: LimitPeriod;
  unit: LimitUnit;
  /** The limit in its unit: tokens, micro-dollars or requests (the stores count every unit alike). */
  tokenLimit: number;
}

export interface Reservation {
  readonly id: string;
  /** Deduplicated and in refusal order (see `orderLimits`). */
  readonly limits: readonly UsageLimit[];
  readonly amount: number;
  /** One per limit: the period the reservation counts against (`periodKey`). */
  readonly periodStarts: readonly string[];
}

export type ReserveResult =
  | { ok: true; reservation: Reservation }
  | { ok: false; limit: UsageLimit; resetsAt: Date | null /* null for all_time */ };

export interface LimitConsumption {
  used: number;
  reserved: number;
  periodStart: Date | null;
  resetsAt: Date | null;
}

/**
 * What a gateway process asks beyond a call's own amount when it reserves a slice (slices.ts):
 * up to `most` more, in whole multiples of `step` (the asking call's amount, so that a slice
 * serves whole calls of its size). The store grants
 *   extra = min(most, floor(room / (sliceRoomDivisor × holders))), rounded down to a multiple of step,
 * where `room` is the smallest over the limits of `limit − used − reserved − amount` (what is left
 * once the call itself is reserved) and `holders` the processes holding a live lease (at least 1).
 */
export interface SliceAsk {
  most: number;
  step: number;
}

/**
 * The divisor of `SliceAsk`'s rule. So one grant never takes more than half of the room that is left, and processes that share a
 * limit take shares of what is left in turn; as the room shrinks, so do grants, until the share
 * is below one call's amount and calls reserve one by one.
 */
export const sliceRoomDivisor = 2;

export interface CounterStore {
  /**
   * Atomically for all `limits`: if any refuses (see the rule above), answer the first such limit
   * in refusal order and change nothing; else add `amount` to every limit's reserved. With `slice`,
   * a granted reservation also holds the extra of `SliceAsk` (its `amount` says how much it holds
   * in all): the refusal rule still reads `amount` alone, so a slice never refuses a call that
   * would have fitted.
   */
  reserve(limits: readonly UsageLimit[], amount: number, now: Date, slice?: SliceAsk): Promise<ReserveResult>;
  /**
   * Settles `reservation` as `actualTokens` and, in the same atomic step, keeps `next.amount` of
   * what it held reserved under `next` (a new id, the same limits and periods, this store's lease);
   * the rest is given back. `next.amount` is at most `reservation.amount`: what is kept was held
   * already, so nothing is checked and nothing can pass a limit. Answers what `next` holds: its
   * amount, or 0 when the sweep had taken `reservation` (its room was given back then, and cannot
   * be kept without a check); `next` exists either way, so that later usage can settle on it.
   * Idempotent per reservation id: a repeat answers what `next` holds.
   */
  carry(reservation: Reservation, actualTokens: number, next: Reservation): Promise<number>;
  /**
   * Moves the reservation to used as `actualTokens` (more or less than reserved), in the periods
   * the reservation was made in. Idempotent per reservation id; durable once it resolves.
   * A reservation already expired by `sweep` still counts its tokens, and releases nothing twice.
   */
  settle(reservation: Reservation, actualTokens: number): Promise<void>;
  /** Releases a reservation without usage (upstream error before any output). Idempotent. */
  release(reservation: Reservation): Promise<void>;
  /** Current consumption of each limit (by limit id) in its current period. */
  consumption(limits: readonly UsageLimit[], now: Date): Promise<Map<string, LimitConsumption>>;
  /**
   * Renews this store's lease (see `defaultLeaseTtlMs`), under which its reservations are made:
   * once per `leaseTtlMs / leaseRenewalsPerTtl`, and once before the first reservation.
   */
  renewLease(): Promise<void>;
  /**
   * Releases reservations that were never settled or released: those of a process whose lease
   * has lapsed (it died, or stopped), and, as a backstop, any made before
   * `now - reservationTtlMs`. Safe to run from every process at once; returns how many it
   * expired. Every process runs it at each lease renewal.
   */
  sweep(now: Date): Promise<number>;
  /** Gives the lease up, so that what this store still holds is swept at once, and disconnects. */
  close(): Promise<void>;
}

/**
 * How long a reservation may stay open before `sweep` takes it for abandoned whatever its lease:
 * 15 minutes. The backstop behind the leases (a reservation made under a lease that was since
 * forgotten). Sweeping a request that is in fact still running costs little: its settle still
 * counts every token, only its reservation stops guarding the budget early. Model calls that
 * stream for longer than 15 minutes are rare.
 */
export const defaultReservationTtlMs = 15 * 60_000;

/**
 * Every store holds a lease, renewed by its process while it runs, and each reservation records
 * the lease it was made under. A live process always settles or releases (in a finally), so only
 * a process that died leaves reservations open: once its lease lapses, the next sweep of any
 * other process releases them. So budget a killed process held is back within
 * `leaseTtlMs + leaseTtlMs / leaseRenewalsPerTtl` (12.5 s by default), not after the
 * 15-minute backstop. Lease time is the counter store's own clock (PostgreSQL's, or Redis's key
 * expiry), so the hosts' clocks do not matter. A live process whose renewals stall for longer
 * than the TTL (a database outage, a frozen event loop) loses only the guard of its open
 * reservations, as above; its next renewal takes the lease back.
 */
export const defaultLeaseTtlMs = 10_000;

/** Renewals (and sweeps) per lease TTL: a lease survives a few failed renewals in a row. */
export const leaseRenewalsPerTtl = 4;

const scopeOrder: Record<LimitScope, number> = { key: 0, user: 1, group: 2 };
const periodOrder: Record<LimitPeriod, number> = { daily: 0, weekly: 1, monthly: 2, all_time: 3 };

/** Deduplicates by id and sorts in refusal order: key, user, group; then daily … all_time; then id. */
export function orderLimits(limits: readonly UsageLimit[]): UsageLimit[] {
  const byId = new Map<string, UsageLimit>();
  for (const limit of limits) byId.set(limit.id, limit);
  return [...byId.values()].sort(
    (a, b) =>
      scopeOrder[a.scope] - scopeOrder[b.scope] ||
      periodOrder[a.period] - periodOrder[b.period] ||
      (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
}

/** Token counts are whole, non-negative and exact in a double. */
export function assertTokens(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${name} must be a non-negative integer, got ${value}`);
}

/** What `CounterStore.carry` takes: whole tokens, and a successor of the same limits that keeps no more than was held. */
export function assertCarry(reservation: Reservation, actualTokens: number, next: Reservation): void {
  assertTokens("actualTokens", actualTokens);
  assertTokens("next.amount", next.amount);
  if (next.amount > reservation.amount) throw new RangeError(`a carry keeps at most what was held: ${next.amount} > ${reservation.amount}`);
  if (next.limits !== reservation.limits && next.limits.map((l) => l.id).join() !== reservation.limits.map((l) => l.id).join()) {
    throw new Error("a carry's successor covers the same limits");
  }
}

/** A reservation covers limits of one workspace: its durable record belongs to that workspace. */
export function workspaceOf(limits: readonly UsageLimit[]): string {
  const workspaceId = limits[0]!.workspaceId;
  if (limits.some((limit) => limit.workspaceId !== workspaceId)) throw new Error("limits of one reservation must share a workspace");
  return workspaceId;
}
