import type { LimitPeriod } from "./types.ts";

/**
 * Calendar periods in UTC. Weeks start on Monday (ISO 8601). Every function takes `now`, so
 * tests and callers decide the clock.
 */

const dayMs = 86_400_000;

/** The start of the period `now` falls in; null for all_time, which never starts over. */
export function periodStart(period: LimitPeriod, now: Date): Date | null {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  const midnight = Date.UTC(y, m, now.getUTCDate());
  switch (period) {
    case "daily":
      return new Date(midnight);
    case "weekly":
      // getUTCDay: Sunday 0 … Saturday 6; days since Monday: Monday 0 … Sunday 6.
      return new Date(midnight - ((now.getUTCDay() + 6) % 7) * dayMs);
    case "monthly":
      return new Date(Date.UTC(y, m, 1));
    case "all_time":
      return null;
  }
}

/** When the period `now` falls in ends, and the next starts; null for all_time. */
export function resetsAt(period: LimitPeriod, now: Date): Date | null {
  const start = periodStart(period, now);
  if (start === null) return null;
  switch (period) {
    case "daily":
      return new Date(start.getTime() + dayMs);
    case "weekly":
      return new Date(start.getTime() + 7 * dayMs);
    default:
      // Date.UTC carries month 12 into January of the next year.
      return new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1));
  }
}

/** all_time's period key: a period start that is never a date. */
export const allTimeKey = "all_time";

/** The stores' name for the period `now` falls in: its start as ISO 8601, or `all_time`. */
export function periodKey(period: LimitPeriod, now: Date): string {
  return periodStart(period, now)?.toISOString() ?? allTimeKey;
}
