/**
 * A column of the rows in SQL, as row filters and window measures name it: a canonical column
 * (`openlayer_latency`, …) is a real column of inference_row; any other name is a key of the row as
 * sent, passed as a parameter (appended to `params`), never spliced into the SQL.
 */

/** The canonical names of the row store's columns, as tests and filters refer to them. */
export const canonicalColumns = {
  openlayer_row_id: "row_id",
  openlayer_inference_id: "inference_id",
  openlayer_timestamp: "extract(epoch from ts)",
  openlayer_output: "output",
  openlayer_ground_truth: "ground_truth",
  openlayer_latency: "latency_ms",
  openlayer_cost: "cost",
  openlayer_num_of_tokens: "num_tokens",
  openlayer_session_id: "session_id",
  openlayer_user_id: "user_id",
} as const;

type Canonical = keyof typeof canonicalColumns;

/** The canonical columns that hold numbers. */
const numericColumns: ReadonlySet<string> = new Set<Canonical>([
  "openlayer_row_id", "openlayer_timestamp", "openlayer_latency", "openlayer_cost", "openlayer_num_of_tokens",
]);

export function isCanonical(name: string): name is Canonical {
  return Object.hasOwn(canonicalColumns, name);
}

/** A column as jsonb. */
export function jsonbOf(name: string, params: unknown[]): string {
  if (isCanonical(name)) return `to_jsonb(${canonicalColumns[name]})`;
  params.push(name);
  return `(data -> $${params.length})`;
}

/** A column as text: a string as it is, any other value as its JSON. */
export function textOf(name: string, params: unknown[]): string {
  if (isCanonical(name)) return `(${canonicalColumns[name]})::text`;
  params.push(name);
  return `(data ->> $${params.length})`;
}

/** A column as a number, or null when it holds something else. */
export function numberOf(name: string, params: unknown[]): string {
  if (isCanonical(name)) return numericColumns.has(name) ? `(${canonicalColumns[name]})::float8` : "null::float8";
  const value = jsonbOf(name, params);
  return `(case when jsonb_typeof(${value}) = 'number' then (${value} #>> '{}')::float8 end)`;
}
