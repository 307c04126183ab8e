/** What an array literal element may be: text, a number, a flag, or NULL. */
export type ArrayElement = string | number | boolean | null | undefined;

/** Characters that need a backslash inside a quoted array element. */
const NEEDS_ESCAPE = /["\\]/;

/**
 * A PostgreSQL array literal (`{…}`) of `values`, to be sent as one text parameter and cast
 * (`$1::uuid[]`). Made here rather than by pg from a JS array: pg builds the literal by
 * concatenation, with a string or two per element on the way, and for the request log's batches
 * that was the largest single allocation of a gateway call (docs/performance.md, "Allocation per
 * call"). Text is always quoted and its `"` and `\` escaped, as pg does; numbers and flags need no
 * quotes; null and undefined are NULL. Times go as numbers (epoch milliseconds): a Date's
 * toISOString took 7,300 instructions (request-log.ts).
 */
export function arrayLiteral(values: readonly ArrayElement[]): string {
  const parts = new Array<string>(values.length);
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (value === null || value === undefined) parts[i] = "NULL";
    else if (typeof value === "string") parts[i] = `"${NEEDS_ESCAPE.test(value) ? value.replace(/["\\]/g, "\\$&") : value}"`;
    else parts[i] = String(value);
  }
  return `{${parts.join(",")}}`;
}
