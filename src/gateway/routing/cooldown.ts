/**
 * Which providers a gateway process skips for a while, by provider ID: one that answered 429 until
 * its Retry-After has passed, and one that keeps failing for 30 s. Per process and in memory: each
 * process learns from its own calls, and a restart forgets. Routing reads it through `isCooling`
 * (candidates.ts), and tries a cooling provider anyway when every target of the rule is cooling.
 */

/** What routing needs to know of the cooldown. */
export interface CooldownView {
  isCooling(providerId: string): boolean;
}

/** A 429's Retry-After is honoured up to this. */
export const MAX_RETRY_AFTER_SECONDS = 300;
/** A 429 without a usable Retry-After. */
export const DEFAULT_RATE_LIMIT_SECONDS = 1;
/** Failures in a row (connection failure, timeout, 5xx) from which a provider is skipped… */
export const FAILURES_IN_A_ROW = 3;
/** …for this long after the latest of them. */
export const FAILURE_COOLDOWN_SECONDS = 30;

export interface Failure {
  /**
   * The provider's HTTP status, if it answered: 429 cools it for its Retry-After; any other status
   * (a 5xx) counts as a failure, as does none (a connection failure or a timeout).
   */
  status?: number;
  /** A 429's Retry-After, in seconds (parseRetryAfter reads the header). Read only with status 429. */
  retryAfterSeconds?: number;
}

interface ProviderState {
  /** Failures since the last success. */
  failuresInARow: number;
  /** Skipped while now < this (ms): after the latest failure that made `failuresInARow` reach 3 or more. */
  failingUntil: number;
  /** Skipped while now < this (ms): a 429's Retry-After. */
  rateLimitedUntil: number;
}

export class Cooldown implements CooldownView {
  readonly #now: () => number;
  readonly #states = new Map<string, ProviderState>();

  /** `now`: milliseconds, Date.now by default; tests pass a fake clock. */
  constructor(options: { now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
  }

  /**
   * A call to the provider failed. A 429 skips it until its Retry-After has passed (at most 300 s;
   * 1 s without one), and does not count as a failure. Anything else counts: from the third in a
   * row, each one skips the provider for 30 s (so a provider still failing when its 30 s are over
   * is skipped again after one more failure, not three).
   */
  failed(providerId: string, failure: Failure = {}): void {
    const now = this.#now();
    const state = this.#state(providerId);
    if (failure.status === 429) {
      const seconds = rateLimitSeconds(failure.retryAfterSeconds);
      state.rateLimitedUntil = Math.max(state.rateLimitedUntil, now + seconds * 1000);
      return;
    }
    state.failuresInARow += 1;
    if (state.failuresInARow >= FAILURES_IN_A_ROW) {
      state.failingUntil = Math.max(state.failingUntil, now + FAILURE_COOLDOWN_SECONDS * 1000);
    }
  }

  /** A call to the provider succeeded: its failures in a row start again from 0 and their cooldown ends; a 429's stays. */
  succeeded(providerId: string): void {
    const state = this.#states.get(providerId);
    if (!state) return;
    state.failuresInARow = 0;
    state.failingUntil = 0;
    if (state.rateLimitedUntil <= this.#now()) this.#states.delete(providerId);
  }

  isCooling(providerId: string): boolean {
    const state = this.#states.get(providerId);
    if (!state) return false;
    const now = this.#now();
    return now < state.failingUntil || now < state.rateLimitedUntil;
  }

  /** When the provider is skipped until (ms since the epoch), or undefined when it is not. For logs and tests. */
  coolingUntil(providerId: string): number | undefined {
    const state = this.#states.get(providerId);
    if (!state || !this.isCooling(providerId)) return undefined;
    return Math.max(state.failingUntil, state.rateLimitedUntil);
  }

  #state(providerId: string): ProviderState {
    let state = this.#states.get(providerId);
    if (!state) {
      state = { failuresInARow: 0, failingUntil: 0, rateLimitedUntil: 0 };
      this.#states.set(providerId, state);
    }
    return state;
  }
}

/** A 429's cooldown in seconds: its Retry-After from 0 to 300, or 1 s when it gave none that can be read. */
function rateLimitSeconds(retryAfterSeconds: number | undefined): number {
  if (retryAfterSeconds === undefined || !Number.isFinite(retryAfterSeconds)) return DEFAULT_RATE_LIMIT_SECONDS;
  return Math.min(Math.max(retryAfterSeconds, 0), MAX_RETRY_AFTER_SECONDS);
}

/**
 * A Retry-After header in seconds: delay-seconds ("7"), or an HTTP date (the seconds from `nowMs`
 * until then, 0 if past). Undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | readonly string[] | null | undefined, nowMs: number = Date.now()): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  const date = Date.parse(text);
  if (Number.isNaN(date) || !/[A-Za-z]/.test(text)) return undefined;
  return Math.max(0, (date - nowMs) / 1000);
}
