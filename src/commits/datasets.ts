import type { JsonObject } from "@bufbuild/protobuf";
import type pg from "pg";
import { inTransaction } from "../db/pools.ts";
import { readRows, type ReadLimits } from "../pipelines/files/read-rows.ts";
import { RowMeter } from "../pipelines/rows/measure.ts";
import type { DatasetKind } from "./bundle.ts";

/** The canonical columns a commit's config names (openlayer.json, as data-stream configs name them). */
export interface DatasetColumns {
  output?: string;
  groundTruth?: string;
  latency?: string;
  cost?: string;
  numOfTokens?: string;
  inputColumns: string[];
  contextColumn?: string;
}

function stringKey(config: JsonObject, ...keys: string[]): string | undefined {
  for (const key of keys) {
    const value = config[key];
    if (typeof value === "string" && value !== "") return value;
  }
  return undefined;
}

/**
 * The columns of a commit's config. Read leniently: the SDK's openlayer.json carries more than a
 * data config (the model's name, its architecture), and what Warden does not use is left alone.
 */
export function datasetColumns(config: JsonObject): DatasetColumns {
  const inputs = config.inputVariableNames;
  return {
    output: stringKey(config, "outputColumnName", "predictionsColumnName"),
    groundTruth: stringKey(config, "groundTruthColumnName", "labelColumnName", "targetColumnName"),
    latency: stringKey(config, "latencyColumnName"),
    cost: stringKey(config, "costColumnName"),
    numOfTokens: stringKey(config, "numOfTokenColumnName"),
    inputColumns: Array.isArray(inputs) ? inputs.filter((v): v is string => typeof v === "string") : [],
    contextColumn: stringKey(config, "contextColumnName"),
  };
}

/**
 * A commit's datasets, staged for its evaluation in a temporary table shaped as inference_row, so
 * that development tests are measured by the same SQL as monitoring windows. The table lives for
 * one transaction on one connection: nothing of it outlasts the evaluation, or a crash.
 */
export class StagedDatasets {
  readonly #client: pg.PoolClient;
  #rows = 0;

  private constructor(client: pg.PoolClient) {
    this.#client = client;
  }

  /** Runs `work` with an empty stage, on a connection of `pool` held until it returns. */
  static async use<T>(pool: pg.Pool, work: (stage: StagedDatasets) => Promise<T>): Promise<T> {
    return inTransaction(pool, async (client) => {
      await client.query("create temporary table commit_row (like inference_row including defaults, dataset text not null) on commit drop");
      return work(new StagedDatasets(client));
    });
  }

  /** Reads one dataset file into the stage, in batches; a file that breaks a rule throws a 400 naming the line. */
  async load(kind: DatasetKind, format: "csv" | "jsonl", bytes: AsyncIterable<Uint8Array>, limits: ReadLimits): Promise<void> {
    for await (const batch of readRows(bytes, format, limits)) {
      await this.#client.query(
        `insert into commit_row (row_id, pipeline_id, inference_id, ts, data, dataset)
         select $2::bigint + r.n, '00000000-0000-0000-0000-000000000000', ($2::bigint + r.n)::text, now(), r.value, $3
           from jsonb_array_elements($1::jsonb) with ordinality as r(value, n)`,
        [JSON.stringify(batch), this.#rows, kind],
      );
      this.#rows += batch.length;
    }
  }

  /** Fills the canonical columns from the rows, once the config that names them is known. */
  async map(columns: DatasetColumns): Promise<void> {
    await this.#client.query(
      `update commit_row set output = data ->> $1::text, ground_truth = data ->> $2::text,
         latency_ms = case when jsonb_typeof(data -> $3::text) = 'number' then (data ->> $3::text)::float8 end,
         cost = case when jsonb_typeof(data -> $4::text) = 'number' then (data ->> $4::text)::float8 end,
         num_tokens = case when jsonb_typeof(data -> $5::text) = 'number' then (data ->> $5::text)::float8 end`,
      [columns.output ?? null, columns.groundTruth ?? null, columns.latency ?? null, columns.cost ?? null, columns.numOfTokens ?? null],
    );
  }

  /** The rows of one dataset, to measure. */
  meter(kind: DatasetKind): RowMeter {
    return new RowMeter({ client: this.#client }, { sql: "select * from commit_row where dataset = $1", params: [kind] });
  }
}
