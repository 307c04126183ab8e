import { randomUUID } from "node:crypto";
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
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
 * What can be measured of a set of rows, in SQL where they are: the evaluators of tests
 * (src/tests/evaluation/) say what they need in these terms. A column is a canonical one
 * (`openlayer_latency`, …) or a column of the rows as sent.
 */
export type RowMeasure =
  | { kind: "rowCount" }
  /** Rows with a null or missing value in `column`; with none, rows with a null in any column as sent. */
  | { kind: "nullRowCount"; column?: string }
  /** Rows equal to an earlier row, over `columns` (as sent or canonical), or over the whole row as sent. */
  | { kind: "duplicateRowCount"; columns?: string[] }
  /** A statistic of the length, in characters, of a text column's values (rows without one are left out). */
  | { kind: "characterLength"; column: string; statistic: Statistic }
  /** A statistic of the number of words (runs of non-space characters) of a text column's values. */
  | { kind: "wordCount"; column: string; statistic: Statistic }
  /** A statistic of a numeric column's values (rows without a number there are left out). */
  | { kind: "numeric"; column: string; statistic: Statistic };

/**
 * The rows a meter reads: a select of inference_row's columns, as a window of a pipeline or a
 * commit's dataset staged in a temporary table of the same shape.
 */
export interface RowSet {
  sql: string;
  params: unknown[];
}

export function windowRows(window: Window): RowSet {
  return {
    sql: "select * from inference_row where pipeline_id = $1 and ts >= $2 and ts < $3",
    params: [window.pipelineId, window.start, window.end],
  };
}

const percentile: Partial<Record<Statistic, number>> = { median: 0.5, p90: 0.9, p95: 0.95, p99: 0.99 };

function aggregate(statistic: Statistic, expression: string): string {
  const p = percentile[statistic];
  if (p !== undefined) return `percentile_cont(${p}) within group (order by ${expression})`;
  return `${statistic === "mean" ? "avg" : statistic}(${expression})`;
}

/** The select of one measure over `w` (the rows), appending its parameters to `params`. */
function sqlOf(measure: RowMeasure, params: unknown[]): string {
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
      // Rows minus groups, grouped by hashing: count(distinct) would sort every row.
      return `select coalesce(sum(n) - count(*), 0)::float8 as value from (select count(*) as n from w group by ${key}) g`;
    }
    case "characterLength":
      return `select ${aggregate(measure.statistic, `char_length(${textOf(measure.column, params)})`)}::float8 as value from w`;
    case "wordCount": {
      // Words are runs of non-space characters: the count of such runs, which regexp_count finds
      // in one pass (PostgreSQL 15).
      const words = `regexp_count(${textOf(measure.column, params)}, '\\S+')`;
      return `select ${aggregate(measure.statistic, words)}::float8 as value from w`;
    }
    case "numeric":
      return `select ${aggregate(measure.statistic, numberOf(measure.column, params))}::float8 as value from w`;
  }
}

/** An object without its null values (as a projection answers a missing field). */
function withoutNulls(row: JsonObject): JsonObject {
  const kept: JsonObject = {};
  for (const [key, value] of Object.entries(row)) if (value !== null) kept[key] = value;
  return kept;
}

/** Rows fetched per round trip when rows are scanned into the process. */
const scanBatch = 5_000;

/**
 * Measures a set of rows in PostgreSQL, where they are, and scans them out in batches for the
 * measures computed in the process (detectors, DuckDB, a judge). It works on a pool, or on the
 * one connection that holds a temporary table inside its transaction.
 */
export class RowMeter {
  readonly #on: { pool: pg.Pool } | { client: pg.PoolClient };
  readonly #db: pg.Pool | pg.PoolClient;
  readonly #rows: RowSet;

  constructor(on: { pool: pg.Pool } | { client: pg.PoolClient }, rows: RowSet) {
    this.#on = on;
    this.#db = "pool" in on ? on.pool : on.client;
    this.#rows = rows;
  }

  /** The measure's value; null when it has nothing to work on (a mean of no values). */
  async measure(measure: RowMeasure): Promise<number | null> {
    const params = [...this.#rows.params];
    const select = sqlOf(measure, params);
    const { rows } = await this.#db.query<{ value: number | null }>(`with w as (${this.#rows.sql}) ${select}`, params);
    return rows[0]?.value ?? null;
  }

  /** Whether there is no row at all: one index probe, where a count would read them all. */
  async isEmpty(): Promise<boolean> {
    const { rows } = await this.#db.query<{ found: boolean }>(`select exists (${this.#rows.sql}) as found`, [...this.#rows.params]);
    return !rows[0]?.found;
  }

  /** Whether any row has `column` (as sent, or a canonical column with a value). */
  async hasColumn(column: string): Promise<boolean> {
    const params = [...this.#rows.params];
    const test = isCanonical(column) ? `${canonicalColumns[column]} is not null` : (params.push(column), `data ? $${params.length}`);
    const { rows } = await this.#db.query<{ found: boolean }>(`select exists (select 1 from (${this.#rows.sql}) w where ${test}) as found`, params);
    return rows[0]?.found ?? false;
  }

  /** The values of one column, row by row (null where a row has none), in batches. */
  async *values(column: string): AsyncGenerator<JsonValue[]> {
    const params = [...this.#rows.params];
    for await (const batch of this.#scan<{ v: JsonValue }>(`select ${jsonbOf(column, params)} as v from (${this.#rows.sql}) w`, params)) {
      yield batch.map((row) => row.v);
    }
  }

  /**
   * Up to `limit` rows, with their canonical output and ground truth: the same rows each time for
   * the same data (ordered by a hash of the inference ID), spread over the whole set.
   */
  async sample(limit: number): Promise<{ output: string | null; groundTruth: string | null; data: JsonObject }[]> {
    const params = [...this.#rows.params, limit];
    const { rows } = await this.#db.query<{ output: string | null; groundTruth: string | null; data: JsonObject }>(
      `select output, ground_truth as "groundTruth", data from (${this.#rows.sql}) w order by md5(inference_id), row_id limit $${params.length}`,
      params,
    );
    return rows;
  }

  /**
   * The rows as sent, in batches; with `columns`, only those fields, as written and in lower case
   * (a cheap projection in SQL, where matching every key without regard to case would cost a pass
   * over each row's keys), null values left out.
   */
  async *rows(columns?: readonly string[]): AsyncGenerator<JsonObject[]> {
    const params = [...this.#rows.params];
    let select = "data";
    const names = columns === undefined ? [] : [...new Set(columns.flatMap((c) => [c, c.toLowerCase()]))];
    // jsonb_build_object takes at most 100 arguments: a query naming more fields gets them all.
    if (columns !== undefined && names.length <= 50) {
      select = `jsonb_build_object(${names.map((name) => (params.push(name), `$${params.length}::text, data -> $${params.length}::text`)).join(", ")})`;
    }
    for await (const batch of this.#scan<{ data: JsonObject }>(`select ${select} as data from (${this.#rows.sql}) w`, params)) {
      yield select === "data" ? batch.map((row) => row.data) : batch.map((row) => withoutNulls(row.data));
    }
  }

  /**
   * A server-side cursor, fetched in batches: memory stays bounded by a batch, and each fetch is
   * one statement under the connection's deadlines. On a pool, the cursor gets a connection and a
   * transaction of its own; on a client, it lives in the client's transaction.
   */
  async *#scan<R extends pg.QueryResultRow>(sql: string, params: unknown[]): AsyncGenerator<R[]> {
    const pooled = "pool" in this.#on;
    const client = "pool" in this.#on ? await this.#on.pool.connect() : this.#on.client;
    const cursor = `rows_${randomUUID().replaceAll("-", "")}`;
    let open = false;
    let failed = false;
    try {
      if (pooled) await client.query("begin read only");
      await client.query(`declare ${cursor} no scroll cursor for ${sql}`, params);
      open = true;
      for (;;) {
        const { rows } = await client.query<R>(`fetch ${scanBatch} from ${cursor}`);
        if (rows.length > 0) yield rows;
        if (rows.length < scanBatch) break;
      }
    } catch (err) {
      failed = true;
      throw err;
    } finally {
      if (pooled) {
        // The transaction's end closes the cursor.
        await client.query(failed ? "rollback" : "commit").catch(() => undefined);
        client.release();
      } else if (open && !failed) {
        // In the caller's transaction, the cursor is closed here. (After a failed statement the
        // transaction is aborted, where even a close fails: the caller's rollback ends it.)
        await client.query(`close ${cursor}`);
      }
    }
  }
}
