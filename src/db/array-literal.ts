/** What an array literal element may be: text, a number, a flag, or NULL. */
export type ArrayElement = string | number | boolean | null | undefined;

/** Characters that need a backslash inside a quoted array element. */
const NEEDS_ESCAPE = /["\\]/;
/**
 * What PostgreSQL's array parser reads as syntax in an unquoted element: quotes, backslashes, the
 * delimiter, braces and white space (which it trims; `\s` holds more than its six characters,
 * which only quotes a few more elements than needed).
 */
const NEEDS_QUOTES = /[\s",\\{}]/;

/**
 * A PostgreSQL array literal (`{…}`) of `values`, to be sent as one text parameter and cast
 * (`$1::uuid[]`). Made here rather than by pg from a JS array: pg builds the literal by
 * concatenation, with a string or two per element on the way, and for the request log's batches
 * that was the largest single allocation of a gateway call (docs/performance.md, "Allocation per
 * call"). Text that needs quotes (`plain`) is quoted, its `"` and `\` escaped, as pg does; the
 * rest, most of it (IDs, names, models), goes bare, which costs a third less to make (measured in
 * a loop) and two bytes less to send. Numbers and flags need no quotes; null and undefined are
 * NULL. Times go as numbers (epoch milliseconds): a Date's toISOString took 7,300 instructions
 * (request-log.ts).
 */
export function arrayLiteral(values: readonly ArrayElement[]): string {
  const parts = new Array<string>(values.length);
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (value === null || value === undefined) parts[i] = "NULL";
    else if (typeof value === "string") parts[i] = plain(value) ? value : `"${NEEDS_ESCAPE.test(value) ? value.replace(/["\\]/g, "\\$&") : value}"`;
    else parts[i] = String(value);
  }
  return `{${parts.join(",")}}`;
}

/**
 * Text that means itself unquoted: not empty, none of NEEDS_QUOTES, and not the word NULL in any
 * case (every four-character text is quoted, which is simpler than comparing and costs nothing).
 */
function plain(text: string): boolean {
  return text.length !== 0 && text.length !== 4 && !NEEDS_QUOTES.test(text);
}
