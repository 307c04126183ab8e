import { performance } from "node:perf_hooks";
import type { Logger } from "../../platform/logger.ts";
import { allTimeKey, periodStart, resetsAt } from "./periods.ts";
import { Slice, type Refusal } from "./slice.ts";
import type { CounterStore, LimitPeriod, UsageLimit } from "./types.ts";

/**
 * How often a process writes the usage of its ended calls to the store and gives back the room
 * its idle slices hold: every 100 ms. The usage of calls that ended since the last flush that
 * completed is what a crash of the process loses; room sits idle in a slice for at most two
 * intervals after its last admission.
 */
export const sliceFlushIntervalMs = 100;

/** A call's claim on one slice: ended with its usage, or with none. */
export interface Hold {
  readonly ok: true;
  readonly slice: Slice;
  readonly amount: number;
}

/**
 * The slices of one process (slice.ts), one per set of limits a call counts against, flushed in
 * the background. What a call needs is admitted from its slice in memory; the store is asked only
 * when a slice runs short, and refuses only when the budget has no room that no process holds.
 */
export class Slices {
  readonly #store: CounterStore;
  readonly #logger: Logger;
  readonly #intervalMs: number;
  readonly #leaseTtlMs: number;
  readonly #slices = new Map<string, Slice>();
  readonly #periods = new PeriodKeys();
  readonly #keys = new WeakMap<readonly UsageLimit[], PeriodSpan>();
  /** Until when (performance.now()) this process's lease is surely live in the store; see `leaseRenewed`. */
  #leaseLiveUntil = -Infinity;
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;
  #failing = false;
  #closed = false;

  /**
   * `leaseTtlMs`: the store's lease TTL, which bounds how long held room may be trusted (see
   * `leaseRenewed`). `intervalMs` 0: no background flush (tests call `flush`).
   */
  constructor(store: CounterStore, logger: Logger, options: { leaseTtlMs: number; intervalMs?: number }) {
    this.#store = store;
    this.#logger = logger;
    this.#leaseTtlMs = options.leaseTtlMs;
    this.#intervalMs = options.intervalMs ?? sliceFlushIntervalMs;
  }

  /**
   * The store renewed this process's lease, asked at `sentAt` (performance.now()). The store's
   * sweep releases a process's reservations only once its lease has lapsed by the store's clock,
   * no sooner than a TTL after the last renewal was asked: until three quarters of that (a
   * quarter left for the clocks' drift), the room the slices hold is surely still theirs, and
   * calls are admitted from it without asking. Past it (renewals failing: the store unreachable,
   * or this process frozen), every call goes to the store, and what was held is forgotten: after
   * such a gap the sweep may have released it.
   */
  leaseRenewed(sentAt: number): void {
    if (sentAt > this.#leaseLiveUntil) for (const slice of this.#slices.values()) slice.forget();
    this.#leaseLiveUntil = Math.max(this.#leaseLiveUntil, sentAt + (this.#leaseTtlMs * 3) / 4);
  }

  /**
   * Admits `amount` against all of `limits` (of one unit and one workspace) in the period `now`
   * falls in: a hold to end when the call ends, or the store's refusal.
   */
  take(limits: readonly UsageLimit[], amount: number, now: Date): Hold | Refusal | Promise<Hold | Refusal> {
    const slice = this.#sliceFor(limits, now);
    if (performance.now() >= this.#leaseLiveUntil) slice.forget();
    const taken = slice.take(amount, now);
    if (taken === undefined) return { ok: true, slice, amount };
    if (!(taken instanceof Promise)) return taken;
    return taken.then((refusal) => refusal ?? { ok: true, slice, amount });
  }

  /** One flush of every slice (`Slice.flush`); forgets slices that hold nothing. */
  flush(idle = false): Promise<void> {
    const round = (async () => {
      await this.#flushing;
      const results = await Promise.allSettled([...this.#slices.values()].map((slice) => slice.flush(idle)));
      const failed = results.find((result): result is PromiseRejectedResult => result.status === "rejected");
      if (failed && !this.#failing) this.#logger.warn({ err: failed.reason }, "could not write usage to the counters; retrying every flush");
      if (!failed && this.#failing) this.#logger.info("usage written to the counters again");
      this.#failing = failed !== undefined;
      for (const [key, slice] of this.#slices) if (slice.empty) this.#slices.delete(key);
    })();
    this.#flushing = round;
    return round;
  }

  /** Stops flushing, then gives back everything no call holds and writes the last usage. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.flush(true);
  }

  #sliceFor(limits: readonly UsageLimit[], now: Date): Slice {
    const key = this.#keyOf(limits, now);
    let slice = this.#slices.get(key);
    if (!slice) {
      slice = new Slice(this.#store, limits);
      this.#slices.set(key, slice);
      this.#schedule();
    }
    return slice;
  }

  /**
   * The slice's key names each limit at its current value, in its current period: a changed limit
   * or a new period starts a slice of its own, and the old one goes back once idle. Kept per
   * array of limits (the limit step hands the same array for a key until the next snapshot) until
   * the first of its periods ends: made anew, it was some 200 characters concatenated and hashed
   * on every call.
   */
  #keyOf(limits: readonly UsageLimit[], now: Date): string {
    const t = now.getTime();
    const kept = this.#keys.get(limits);
    if (kept && t >= kept.from && t < kept.to) return kept.key;
    let key = "";
    let from = -Infinity;
    let to = Infinity;
    for (const limit of limits) {
      const period = this.#periods.span(limit.period, now);
      key += `${limit.id}:${limit.tokenLimit}:${period.key} `;
      from = Math.max(from, period.from);
      to = Math.min(to, period.to);
    }
    this.#keys.set(limits, { key, from, to });
    return key;
  }

  /** Flushes every interval while there are slices, one flush after the other. */
  #schedule(): void {
    if (this.#timer || this.#closed || this.#intervalMs === 0) return;
    this.#timer = setTimeout(() => {
      void this.flush().finally(() => {
        this.#timer = undefined;
        if (this.#slices.size > 0) this.#schedule();
      });
    }, this.#intervalMs);
    this.#timer.unref();
  }
}

/** A period's key (periods.ts's `periodKey`) and when it holds: from `from` (ms) to before `to`. */
interface PeriodSpan {
  key: string;
  from: number;
  to: number;
}

const allTime: PeriodSpan = { key: allTimeKey, from: -Infinity, to: Infinity };

/** Period keys without a date computation per call: each is kept until its period ends. */
class PeriodKeys {
  readonly #kept = new Map<LimitPeriod, PeriodSpan>();

  span(period: LimitPeriod, now: Date): PeriodSpan {
    if (period === "all_time") return allTime;
    const t = now.getTime();
    const kept = this.#kept.get(period);
    if (kept && t >= kept.from && t < kept.to) return kept;
    const start = periodStart(period, now)!;
    const fresh = { from: start.getTime(), to: resetsAt(period, now)!.getTime(), key: start.toISOString() };
    this.#kept.set(period, fresh);
    return fresh;
  }
}
