import { randomUUID } from "node:crypto";
import type { CounterStore, Reservation, ReserveResult, UsageLimit } from "./types.ts";

/** The store's refusal of a call, as `CounterStore.reserve` answers it. */
export type Refusal = Extract<ReserveResult, { ok: false }>;

interface Waiter {
  amount: number;
  now: Date;
  resolve(refusal: Refusal | undefined): void;
  reject(err: unknown): void;
}

/** One reservation of a flush: settled with `actual`, and carried into `next` unless nothing is kept. */
interface FlushStep {
  reservation: Reservation;
  actual: number;
  next: Reservation | undefined;
}

/**
 * How much of the recent demand a grant asks for beyond the waiting calls: what the slice admitted
 * in the last flush interval (or so far in this one, when that is more), twice over. So a busy
 * slice goes to the store about once every two intervals, a new one doubles its grants while its
 * calls keep coming, and an idle one asks for nothing more than its calls.
 */
const demandIntervals = 2;

/**
 * One process's share of the budget of one set of limits (the limits of one unit that one key's
 * calls count against, in one period, at their current values). The share is held in the store as
 * reservations under this process's lease, so the store's used + reserved covers it: calls are
 * admitted against it in memory, without a round trip, and it can never pass a limit.
 *
 *   held (the reservations' amounts) = free + inFlight + consumed
 *
 * `free` is room no call has taken (negative when calls used more than they reserved: a debt the
 * next flush settles), `inFlight` what admitted calls reserved, `consumed` what ended calls used
 * and no flush has written yet.
 *
 * A call that does not fit asks the store for what it lacks (its amount less the free room) plus
 * a slice for the calls behind it (`SliceAsk`); only the store's refusal refuses it. One request
 * to the store at a time: calls that arrive meanwhile wait behind it, in order.
 *
 * Every flush interval (`flush`) the usage of ended calls is settled and the reservations are
 * carried: a slice that admitted a call since the last flush keeps its free room, one that did
 * not gives it back and keeps only what calls in flight reserved.
 */
export class Slice {
  readonly #limits: readonly UsageLimit[];
  readonly #store: CounterStore;
  #records: Reservation[] = [];
  #free = 0;
  #inFlight = 0;
  #consumed = 0;
  /** Admitted since the last flush, and in the interval before it. */
  #admitted = 0;
  #demand = 0;
  readonly #waiters: Waiter[] = [];
  #growing = false;
  /** A flush the store has not confirmed (yet, or it failed: then tried again as it was, before anything else). */
  #unconfirmed: FlushStep[] | undefined;
  #flushing: Promise<void> | undefined;

  constructor(store: CounterStore, limits: readonly UsageLimit[]) {
    this.#store = store;
    this.#limits = limits;
  }

  /**
   * Admits a call of `amount`: at once (undefined) when the free room covers it and no call waits
   * before it; else once the store has granted what it lacks, or refused it.
   */
  take(amount: number, now: Date): Refusal | undefined | Promise<Refusal | undefined> {
    if (this.#waiters.length === 0 && this.#fits(amount)) {
      this.#admit(amount);
      return undefined;
    }
    return new Promise((resolve, reject) => {
      this.#waiters.push({ amount, now, resolve, reject });
      if (!this.#growing) void this.#grow();
    });
  }

  /** A call admitted for `amount` ended having used `actual` (0 when nothing was generated). */
  end(amount: number, actual: number): void {
    this.#inFlight -= amount;
    this.#free += amount - actual;
    this.#consumed += actual;
  }

  /**
   * Stops trusting the free room: this process's lease may have lapsed, and the sweep released
   * what the slice held. Calls then get their room from the store; what the store does still hold
   * goes back with the next flush (which also learns what the sweep took).
   */
  forget(): void {
    this.#free = Math.min(this.#free, 0);
  }

  /** Nothing held, owed or waited for: the slice can be forgotten. */
  get empty(): boolean {
    return this.#records.length === 0 && this.#inFlight === 0 && this.#consumed === 0 && this.#waiters.length === 0 && !this.#growing && !this.#unconfirmed;
  }

  /**
   * Settles the usage of calls that ended and carries the reservations (see the class). `idle`
   * forces what a slice without admissions does: at close, everything that no call holds goes back.
   * Rejects when the store fails; the next flush tries the same again. One flush at a time.
   */
  flush(idle = false): Promise<void> {
    if (this.#flushing) return this.#flushing;
    const steps = this.#unconfirmed ?? this.#plan(idle || (this.#admitted === 0 && this.#waiters.length === 0));
    this.#demand = this.#admitted;
    this.#admitted = 0;
    return steps.length === 0 ? Promise.resolve() : this.#write(steps);
  }

  /** Writes a flush's steps, and applies what the store kept; on failure keeps them for the next try. */
  #write(steps: FlushStep[]): Promise<void> {
    this.#unconfirmed = steps;
    const written = (async () => {
      const kept = await Promise.all(steps.map((step) => this.#writeStep(step)));
      this.#unconfirmed = undefined;
      steps.forEach(({ next }, i) => {
        if (!next) return;
        // Less than asked: the sweep had taken the reservation (this process's lease lapsed). The
        // calls in flight lose their guard, as every reservation does then; later calls must first
        // get their room back from the store.
        this.#free -= next.amount - kept[i]!;
        this.#records.push({ ...next, amount: kept[i]! });
      });
    })().finally(() => {
      this.#flushing = undefined;
    });
    this.#flushing = written;
    return written;
  }

  /** One step: carried, settled, or given back whole when its calls used none of it. What its successor holds. */
  async #writeStep({ reservation, actual, next }: FlushStep): Promise<number> {
    if (next) return this.#store.carry(reservation, actual, next);
    await (actual > 0 ? this.#store.settle(reservation, actual) : this.#store.release(reservation));
    return 0;
  }

  /**
   * Waits until the store holds what this slice assumes: a flush gives room back locally at once,
   * and a call must not be refused for room its own process has given back but the store not yet
   * taken back.
   */
  async #confirmed(): Promise<void> {
    if (this.#flushing) await this.#flushing;
    // A flush that failed (now, or before) is tried once more, not in a loop: a store that does
    // not answer fails the waiting calls within one deadline.
    else if (this.#unconfirmed) await this.#write(this.#unconfirmed);
  }

  /** What a flush does, applied locally at once: the store only ever holds more than this assumes until it confirms. */
  #plan(idle: boolean): FlushStep[] {
    const records = this.#records;
    const held = records.reduce((sum, r) => sum + r.amount, 0);
    const keep = Math.min(held, this.#inFlight + (idle ? 0 : Math.max(this.#free, 0)));
    const actual = this.#consumed;
    if (actual === 0 && keep === held) return [];
    this.#records = [];
    this.#consumed = 0;
    this.#free = keep - this.#inFlight;
    // Each step is a statement of its own, and must be safe alone: a reservation gives back only
    // room that is truly free, so the usage it counts comes first, then what is kept, and the
    // rest goes back. Usage past what was held (calls that used more than they reserved) counts
    // on the first step.
    let usage = actual;
    let kept = keep;
    const steps = records.map((reservation): FlushStep => {
      const counted = Math.min(reservation.amount, usage);
      const keeps = Math.min(reservation.amount - counted, kept);
      usage -= counted;
      kept -= keeps;
      return { reservation, actual: counted, next: keeps > 0 ? { ...reservation, id: randomUUID(), amount: keeps } : undefined };
    });
    steps[0]!.actual += usage;
    // Calls in flight settle later: they need a reservation to settle on even when none is kept.
    if (keep === 0 && this.#inFlight > 0) steps[0]!.next = { ...records[0]!, id: randomUUID(), amount: 0 };
    return steps;
  }

  #fits(amount: number): boolean {
    // A call of 0 is admitted only from room actually held: the store refuses even 0 once a limit is spent.
    return this.#free >= amount && this.#free > 0;
  }

  #admit(amount: number): void {
    this.#free -= amount;
    this.#inFlight += amount;
    this.#admitted += amount;
  }

  /** Serves the waiting calls in order, asking the store for what the first one lacks, one request at a time. */
  async #grow(): Promise<void> {
    this.#growing = true;
    try {
      while (this.#waiters.length > 0) {
        const head = this.#waiters[0]!;
        if (this.#fits(head.amount)) {
          this.#waiters.shift();
          this.#admit(head.amount);
          head.resolve(undefined);
          continue;
        }
        let result: ReserveResult;
        try {
          if (this.#flushing || this.#unconfirmed) {
            await this.#confirmed();
            continue; // the flush changed the free room: look again
          }
          if (head.amount === 0 && this.#consumed > 0) {
            // A call of 0 is refused only by a spent limit (used >= limit): the store must have
            // this slice's usage to know.
            await this.flush();
            continue;
          }
          let behind = 0;
          for (let i = 1; i < this.#waiters.length; i++) behind += this.#waiters[i]!.amount;
          // What it lacks: its amount less the free room (plus any debt, when free is negative).
          const lacking = head.amount - this.#free;
          result = await this.#store.reserve(this.#limits, lacking, head.now, { most: Math.max(behind, demandIntervals * Math.max(this.#demand, this.#admitted)), step: Math.max(head.amount, 1) });
        } catch (err) {
          // The store did not answer: every waiting call gets the same failure rather than a
          // deadline each, in turn.
          for (const waiter of this.#waiters.splice(0)) waiter.reject(err);
          return;
        }
        if (result.ok) {
          this.#records.push(result.reservation);
          this.#free += result.reservation.amount;
        } else {
          this.#waiters.shift();
          head.resolve(result);
        }
      }
    } finally {
      this.#growing = false;
    }
  }
}
