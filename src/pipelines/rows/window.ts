import type pg from "pg";
import { canonicalColumns, isCanonical, jsonbOf, numberOf, textOf } from "./columns.ts";

/** One pipeline's rows whose timestamp is in [start, end). */
export interface Window {
  pipelineId: string;
  start: Date;
  end: Date;
}

export type Statistic = "mean" | "min" | "max" | "median" | "p90" | "p95" | "p99" | "sum";

/**
 * What can be measured of a window, in SQL over its partition: the evaluators of monitoring tests
 * (src/tests/evaluation/) say what they need in these terms. A column is a canonical one
 * (`openlayer_latency`, …) or a column of the rows as sent.
 */
export type WindowMeasure =
  | { kind: "rowCount" }
  /** Rows with a null or missing value in `column`; with none, rows with a null in any column as sent. */
  | { kind: "nullRowCount"; column?: string }
  /** Rows equal to an earlier row, over `columns` (as sent or canonical), or over the whole row as sent. */
  | { kind: "duplicateRowCount"; columns?: string[] }
  /** A statistic of the length, in characters, of a text column's values (rows without one are left out). */
  | { kind: "characterLength"; column: string; statistic: Statistic }
  /** A statistic of a numeric column's values (rows without a number there are left out). */
  | { kind: "numeric"; column: string; statistic: Statistic };

const percentile: Partial<Record<Statistic, number>> = { median: 0.5, p90: 0.9, p95: 0.95, p99: 0.99 };

function aggregate(statistic: Statistic, expression: string): string {
  const p = percentile[statistic];
  if (p !== undefined) return `percentile_cont(${p}) within group (order by ${expression})`;
  return `${statistic === "mean" ? "avg" : statistic}(${expression})`;
}

/** The select list and the extra parameters of one measure, over `w` (the window's rows). */
function sqlOf(measure: WindowMeasure, params: unknown[]): string {
  switch (measure.kind) {
    case "rowCount":
      return "select count(*)::float8 as value from w";
    case "nullRowCount":
      if (measure.column === undefined) {
        return "select count(*) filter (where exists (select 1 from jsonb_each(w.data) e where e.value = 'null'::jsonb))::float8 as value from w";
      }
      return `select count(*) filter (where ${textOf(measure.column, params)} is null)::float8 as value from w`;
    case "duplicateRowCount": {
      const key = measure.columns === undefined || measure.columns.length === 0
        ? "w.data"
        : `jsonb_build_array(${measure.columns.map((c) => jsonbOf(c, params)).join(", ")})`;
      return `select (count(*) - count(distinct ${key}))::float8 as value from w`;
    }
    case "characterLength":
      return `select ${aggregate(measure.statistic, `char_length(${textOf(measure.column, params)})`)}::float8 as value from w`;
    case "numeric":
      return `select ${aggregate(measure.statistic, numberOf(measure.column, params))}::float8 as value from w`;
  }
}

/**
 * Measures a window in PostgreSQL, where the rows are: only the window's partitions are read, and
 * no row comes into the process. Null when the measure has nothing to work on (a mean of no values).
 */
export async function measureWindow(pool: pg.Pool, window: Window, measure: WindowMeasure): Promise<number | null> {
  const params: unknown[] = [window.pipelineId, window.start, window.end];
  const select = sqlOf(measure, params);
  const { rows } = await pool.query<{ value: number | null }>(
    `with w as (select * from inference_row where pipeline_id = $1 and ts >= $2 and ts < $3) ${select}`,
    params,
  );
  return rows[0]?.value ?? null;
}

/** Whether any row of the window has `column` (as sent, or a canonical column with a value). */
export async function windowHasColumn(pool: pg.Pool, window: Window, column: string): Promise<boolean> {
  const params: unknown[] = [window.pipelineId, window.start, window.end];
  const test = isCanonical(column) ? `${canonicalColumns[column]} is not null` : (params.push(column), `data ? $${params.length}`);
  const { rows } = await pool.query<{ found: boolean }>(
    `select exists (select 1 from inference_row where pipeline_id = $1 and ts >= $2 and ts < $3 and ${test}) as found`,
    params,
  );
  return rows[0]?.found ?? false;
}
