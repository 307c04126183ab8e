import type { JsonValue } from "@bufbuild/protobuf";
import { invalidArgument } from "../../platform/errors.ts";
import { escapeLike } from "../../platform/sql.ts";
import { canonicalColumns, isCanonical, jsonbOf, numberOf } from "./columns.ts";

export interface ColumnCondition {
  measurement: string;
  operator: string;
  value: JsonValue | undefined;
}

/** The rows list's filters and order (the SDKs' RowListParams), checked. */
export interface RowQuery {
  columnFilters: ColumnCondition[];
  rowIdList: bigint[];
  excludeRowIdList: bigint[];
  searchQueryAnd: string[];
  searchQueryOr: string[];
  notSearchQueryAnd: string[];
  notSearchQueryOr: string[];
  sortColumn: string | undefined;
  asc: boolean;
}

const numericOperators: Record<string, string> = { ">": ">", ">=": ">=", "<": "<", "<=": "<=", is: "=", "!=": "<>" };
const setOperators = new Set(["contains_none", "contains_any", "contains_all", "one_of", "none_of"]);

/** Filters per request at most, and search terms: each adds a condition to one query. */
const MAX_CONDITIONS = 50;

function condition(filter: ColumnCondition, i: number, params: unknown[]): string {
  const where = `columnFilters[${i}]`;
  if (filter.measurement === "") throw invalidArgument(`${where}.measurement is required`);
  const { operator, value } = filter;
  if (setOperators.has(operator)) {
    if (!Array.isArray(value) || value.some((item) => typeof item !== "string" && typeof item !== "number")) {
      throw invalidArgument(`${where}.value must be an array of strings and numbers for ${operator}`);
    }
    const column = jsonbOf(filter.measurement, params);
    params.push(JSON.stringify(value));
    const set = `$${params.length}::jsonb`;
    switch (operator) {
      case "one_of":
        return `${set} @> jsonb_build_array(${column})`;
      case "none_of":
        return `not coalesce(${set} @> jsonb_build_array(${column}), false)`;
      case "contains_all":
        return `coalesce(jsonb_typeof(${column}) = 'array' and ${column} @> ${set}, false)`;
      case "contains_any":
        return `exists (select 1 from jsonb_array_elements(${set}) e where jsonb_typeof(${column}) = 'array' and ${column} @> jsonb_build_array(e))`;
      default:
        return `not exists (select 1 from jsonb_array_elements(${set}) e where jsonb_typeof(${column}) = 'array' and ${column} @> jsonb_build_array(e))`;
    }
  }
  const sqlOperator = numericOperators[operator];
  if (sqlOperator === undefined) throw invalidArgument(`${where}.operator must be one of: >, >=, is, <, <=, !=, ${[...setOperators].join(", ")}`);
  if (value === null || value === undefined) {
    if (operator !== "is" && operator !== "!=") throw invalidArgument(`${where}.value must be a number for ${operator}`);
    const column = jsonbOf(filter.measurement, params);
    return operator === "is" ? `coalesce(${column}, 'null'::jsonb) = 'null'::jsonb` : `coalesce(${column}, 'null'::jsonb) <> 'null'::jsonb`;
  }
  if (typeof value === "number") {
    const column = numberOf(filter.measurement, params);
    params.push(value);
    return `coalesce(${column} ${sqlOperator} $${params.length}, ${operator === "!=" ? "true" : "false"})`;
  }
  if ((typeof value === "string" || typeof value === "boolean") && (operator === "is" || operator === "!=")) {
    const column = jsonbOf(filter.measurement, params);
    params.push(JSON.stringify(value));
    return operator === "is" ? `${column} = $${params.length}::jsonb` : `coalesce(${column} <> $${params.length}::jsonb, true)`;
  }
  throw invalidArgument(`${where}.value does not suit the operator ${operator}`);
}

function searchTerm(term: string, params: unknown[]): string {
  params.push(`%${escapeLike(term)}%`);
  return `data::text ilike $${params.length}`;
}

/** ` and …` conditions for `query`, with their parameters appended to `params`. */
export function filterSql(query: RowQuery, params: unknown[]): string {
  const count = query.columnFilters.length + query.searchQueryAnd.length + query.searchQueryOr.length
    + query.notSearchQueryAnd.length + query.notSearchQueryOr.length;
  if (count > MAX_CONDITIONS) throw invalidArgument(`At most ${MAX_CONDITIONS} filters and search terms may be given`);
  const parts = query.columnFilters.map((filter, i) => condition(filter, i, params));
  if (query.rowIdList.length > 0) {
    params.push(query.rowIdList.map(String));
    parts.push(`row_id = any($${params.length}::bigint[])`);
  }
  if (query.excludeRowIdList.length > 0) {
    params.push(query.excludeRowIdList.map(String));
    parts.push(`row_id <> all($${params.length}::bigint[])`);
  }
  // Search terms match the text of the row as sent, case-insensitively: every term of
  // searchQueryAnd, one of searchQueryOr; none of notSearchQueryAnd, not all of notSearchQueryOr.
  for (const term of query.searchQueryAnd) parts.push(searchTerm(term, params));
  if (query.searchQueryOr.length > 0) parts.push(`(${query.searchQueryOr.map((term) => searchTerm(term, params)).join(" or ")})`);
  for (const term of query.notSearchQueryAnd) parts.push(`not ${searchTerm(term, params)}`);
  if (query.notSearchQueryOr.length > 0) {
    parts.push(`(${query.notSearchQueryOr.map((term) => `not ${searchTerm(term, params)}`).join(" or ")})`);
  }
  return parts.map((part) => ` and ${part}`).join("");
}

/** The order: by `sortColumn` (canonical or as sent), newest first unless `asc`; row ID breaks ties. */
export function orderSql(query: RowQuery, params: unknown[]): string {
  const direction = query.asc ? "asc" : "desc";
  if (query.sortColumn === undefined || query.sortColumn === "openlayer_timestamp") return `ts ${direction}, row_id ${direction}`;
  const column = isCanonical(query.sortColumn) ? canonicalColumns[query.sortColumn] : jsonbOf(query.sortColumn, params);
  return `${column} ${direction} nulls last, row_id ${direction}`;
}
