/** How the console writes numbers, money and times: the browser's locale, times in UTC and local. */

const integer = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat(undefined, { maximumFractionDigits: 4 });
const compact = new Intl.NumberFormat(undefined, { notation: "compact", maximumFractionDigits: 1 });
const usd = new Intl.NumberFormat(undefined, { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 6 });
const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
const shortTime = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });

export const formatInteger = (n: number | null | undefined) => (n === null || n === undefined ? "—" : integer.format(n));
export const formatNumber = (n: number | null | undefined) => (n === null || n === undefined ? "—" : decimal.format(n));
export const formatCompact = (n: number) => compact.format(n);
export const formatUsd = (n: number | null | undefined) => (n === null || n === undefined ? "—" : usd.format(n));

export function formatDate(iso: string | null | undefined): string {
  return iso ? dateTime.format(new Date(iso)) : "—";
}

export function formatShortTime(date: Date): string {
  return shortTime.format(date);
}

/** A window as "Nov 24, 08:00 – 09:00". */
export function formatWindow(startIso: string | null, endIso: string | null): string {
  if (!startIso) return "—";
  const start = new Date(startIso);
  if (!endIso) return formatShortTime(start);
  const end = new Date(endIso);
  const sameDay = start.toDateString() === end.toDateString();
  const endText = sameDay ? end.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" }) : formatShortTime(end);
  return `${formatShortTime(start)} – ${endText}`;
}

export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  return ms < 1000 ? `${integer.format(ms)} ms` : `${decimal.format(ms / 1000)} s`;
}

/** A JSON value of a row as a short text for a table cell. */
export function cellText(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  return JSON.stringify(value);
}
