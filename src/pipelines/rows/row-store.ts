import type { JsonObject } from "@bufbuild/protobuf";
import type pg from "pg";
import { inTransaction } from "../../db/pools.ts";
import { notFound } from "../../platform/errors.ts";
import { filterSql, orderSql, type RowQuery } from "./filters.ts";
import type { StoredRow } from "./normalize.ts";
import { RowPartitions } from "./partitions.ts";
import { presentRow, rowColumns, type RowRecord } from "./present.ts";

/** What a late update or a merge changes in a stored row: the given canonical values, and `data` merged in. */
export interface RowPatch {
  inferenceId: string;
  timestamp?: number;
  output?: string | null;
  groundTruth?: string | null;
  latency?: number | null;
  cost?: number | null;
  numOfTokens?: number | null;
  sessionId?: string | null;
  userId?: string | null;
  data: JsonObject;
}

/** One JSON document per batch, read by PostgreSQL with jsonb_to_recordset: one parameter however many rows. */
const recordsetColumns = "i text, t float8, o text, g text, l float8, c float8, n float8, s text, u text, d jsonb";

/**
 * A row whose inference ID the pipeline has already is not stored again: the SDKs retry a POST
 * that timed out or failed with a 5xx, without an idempotency key, and a retried batch must not
 * count twice. (Two copies of one batch in flight at the same instant can still both land.)
 */
const insertSql = `
  insert into inference_row (pipeline_id, inference_id, ts, output, ground_truth, latency_ms, cost, num_tokens, session_id, user_id, data)
  select $1, r.i, to_timestamp(r.t), r.o, r.g, r.l, r.c, r.n, r.s, r.u, r.d
    from jsonb_to_recordset($2::jsonb) as r(${recordsetColumns})
   where not exists (select 1 from inference_row x where x.pipeline_id = $1 and x.inference_id = r.i)`;

// A key absent from a patch leaves its column alone ("?" tests for the key, so an explicit null clears).
const mergeSql = `
  with patch as (
    select * from jsonb_to_recordset($2::jsonb) as r(${recordsetColumns}, k jsonb)
  ), changed as (
    update inference_row row set
      data = row.data || patch.d,
      ts = case when patch.k ? 't' then to_timestamp(patch.t) else row.ts end,
      output = case when patch.k ? 'o' then patch.o else row.output end,
      ground_truth = case when patch.k ? 'g' then patch.g else row.ground_truth end,
      latency_ms = case when patch.k ? 'l' then patch.l else row.latency_ms end,
      cost = case when patch.k ? 'c' then patch.c else row.cost end,
      num_tokens = case when patch.k ? 'n' then patch.n else row.num_tokens end,
      session_id = case when patch.k ? 's' then patch.s else row.session_id end,
      user_id = case when patch.k ? 'u' then patch.u else row.user_id end
    from patch
    where row.pipeline_id = $1 and row.inference_id = patch.i
    returning patch.i
  )
  select distinct patch.i as inference_id from patch where not exists (select 1 from changed where changed.i = patch.i)`;

/** Rows deleted per statement by retention and purges: each stays well inside the statement deadline. */
const deleteBatch = 5_000;

function insertRecord(row: StoredRow): Record<string, unknown> {
  return {
    i: row.inferenceId, t: row.timestamp, o: row.output, g: row.groundTruth, l: row.latency, c: row.cost,
    n: row.numOfTokens, s: row.sessionId, u: row.userId, d: row.data,
  };
}

function patchRecord(patch: RowPatch): Record<string, unknown> {
  const record: Record<string, unknown> = { i: patch.inferenceId, d: patch.data };
  const set = (key: string, value: unknown) => {
    if (value !== undefined) record[key] = value;
  };
  set("t", patch.timestamp);
  set("o", patch.output);
  set("g", patch.groundTruth);
  set("l", patch.latency);
  set("c", patch.cost);
  set("n", patch.numOfTokens);
  set("s", patch.sessionId);
  set("u", patch.userId);
  record.k = Object.fromEntries(Object.keys(record).map((key) => [key, true]));
  return record;
}

export interface WriteOptions {
  /** The timestamps of the rows about to be written, if known: their partitions are made first. */
  timestamps?: Iterable<number>;
  /** The config the rows came with, kept on the pipeline as its latest. */
  config?: JsonObject;
}

/** Writes inside one transaction of RowStore.write: all of them land, or none. */
export interface RowWriter {
  /** Rows inserted so far in this transaction (rows already stored are skipped, not counted). */
  readonly added: number;
  insert(rows: readonly StoredRow[]): Promise<void>;
  /** Merges each patch into the rows with its inference ID; returns the IDs that match no row. */
  merge(patches: readonly RowPatch[]): Promise<string[]>;
}

/**
 * The rows of inference pipelines, in PostgreSQL (migration 20261124030000): monthly partitions by
 * the row's timestamp, canonical columns, and the row as sent in JSONB. It owns its pool, sized for
 * ingestion, apart from the ORM's, so that a burst of data cannot starve the API's other calls.
 */
export class RowStore {
  readonly #pool: pg.Pool;
  readonly #partitions = new RowPartitions();

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  /**
   * Runs `work` in one transaction for one pipeline, and counts the rows it adds on the pipeline.
   * The pipeline row is locked FOR KEY SHARE throughout, which lets concurrent batches insert side
   * by side but makes a deletion of the pipeline wait (and a batch after one find no pipeline: 404),
   * so no row outlives its pipeline unseen. The counters are updated last, so the short row lock
   * that takes is held only until the commit.
   */
  async write<T>(pipelineId: string, options: WriteOptions, work: (writer: RowWriter) => Promise<T>): Promise<T> {
    await this.#partitions.ensure(this.#pool, options.timestamps ?? []);
    return inTransaction(this.#pool, async (client) => {
      let added = 0;
      const writer: RowWriter = {
        get added() {
          return added;
        },
        insert: async (rows) => {
          if (rows.length === 0) return;
          const timestamps = rows.map((row) => row.timestamp);
          await this.#partitions.ensure(this.#pool, timestamps);
          const params = [pipelineId, JSON.stringify(rows.map(insertRecord))];
          const inserted = await this.#withPartitions(client, timestamps, () => client.query(insertSql, params));
          added += inserted.rowCount ?? 0;
        },
        merge: async (patches) => {
          if (patches.length === 0) return [];
          const moved = patches.flatMap((patch) => (patch.timestamp === undefined ? [] : [patch.timestamp]));
          await this.#partitions.ensure(this.#pool, moved);
          const params = [pipelineId, JSON.stringify(patches.map(patchRecord))];
          const result = await this.#withPartitions(client, moved, () => client.query<{ inference_id: string }>(mergeSql, params));
          return result.rows.map((row) => row.inference_id);
        },
      };
      const locked = await client.query("select 1 from inference_pipeline where id = $1 for key share", [pipelineId]);
      if (locked.rowCount === 0) throw notFound("Inference pipeline not found");
      const result = await work(writer);
      if (added > 0 || options.config) {
        await client.query(
          `update inference_pipeline set total_records_count = coalesce(total_records_count, 0) + $2,
             date_last_sample_received = case when $2 > 0 then now() else date_last_sample_received end,
             data_config = coalesce($3::jsonb, data_config)
           where id = $1`,
          [pipelineId, added, options.config ? JSON.stringify(options.config) : null],
        );
      }
      return result;
    });
  }

  /** The newest row with this inference ID, as the API shows rows. */
  async get(pipelineId: string, inferenceId: string): Promise<JsonObject | undefined> {
    const result = await this.#pool.query<RowRecord>(
      `select ${rowColumns} from inference_row where pipeline_id = $1 and inference_id = $2 order by ts desc, row_id desc limit 1`,
      [pipelineId, inferenceId],
    );
    const row = result.rows[0];
    return row ? presentRow(row) : undefined;
  }

  /** Deletes every row with this inference ID; returns how many there were. */
  delete(pipelineId: string, inferenceId: string): Promise<number> {
    return this.#deleteBatch(pipelineId, "delete from inference_row where pipeline_id = $1 and inference_id = $2", [pipelineId, inferenceId], true);
  }

  /** One page of a pipeline's rows, filtered and sorted; `limit + 1` rows ask whether a next page exists. */
  async list(pipelineId: string, query: RowQuery, limit: number, offset: number): Promise<JsonObject[]> {
    const params: unknown[] = [pipelineId];
    const where = filterSql(query, params);
    const order = orderSql(query, params);
    params.push(limit, offset);
    const result = await this.#pool.query<RowRecord>(
      `select ${rowColumns} from inference_row where pipeline_id = $1${where} order by ${order}
        limit $${params.length - 1} offset $${params.length}`,
      params,
    );
    return result.rows.map(presentRow);
  }

  /**
   * Deletes one batch of rows older than `retentionDays` of one pipeline, and uncounts them;
   * returns how many went (a full batch means there may be more).
   */
  async expireBatch(pipelineId: string, retentionDays: number): Promise<number> {
    return this.#deleteBatch(
      pipelineId,
      `delete from inference_row where pipeline_id = $1 and (pipeline_id, ts, row_id) in (
         select pipeline_id, ts, row_id from inference_row
          where pipeline_id = $1 and ts < now() - make_interval(days => $2) order by ts limit $3)`,
      [pipelineId, retentionDays, deleteBatch],
      true,
    );
  }

  /** Deletes one batch of the rows of a deleted pipeline; returns how many went. */
  async purgeBatch(pipelineId: string): Promise<number> {
    return this.#deleteBatch(
      pipelineId,
      `delete from inference_row where pipeline_id = $1 and (pipeline_id, ts, row_id) in (
         select pipeline_id, ts, row_id from inference_row where pipeline_id = $1 limit $2)`,
      [pipelineId, deleteBatch],
      false,
    );
  }

  get batchSize(): number {
    return deleteBatch;
  }

  /** Runs one delete, and uncounts what it deleted when `uncount`; returns how many rows went. */
  #deleteBatch(pipelineId: string, sql: string, params: unknown[], uncount: boolean): Promise<number> {
    return inTransaction(this.#pool, async (client) => {
      const deleted = await client.query(sql, params);
      const count = deleted.rowCount ?? 0;
      if (uncount && count > 0) await this.#uncount(client, pipelineId, count);
      return count;
    });
  }

  /**
   * Runs `statement` inside a savepoint; if a partition this process took for made is not there
   * (dropped by hand, or its creation lost in a crash of PostgreSQL: 23514, "no partition of
   * relation found for row"), forgets what it knew, makes them again and runs it once more.
   */
  async #withPartitions<R extends pg.QueryResultRow>(
    client: pg.PoolClient,
    timestamps: readonly number[],
    statement: () => Promise<pg.QueryResult<R>>,
  ): Promise<pg.QueryResult<R>> {
    await client.query("savepoint rows");
    try {
      return await statement();
    } catch (err) {
      if (!(err instanceof Error && "code" in err && err.code === "23514")) throw err;
      await client.query("rollback to savepoint rows");
      this.#partitions.forget();
      await this.#partitions.ensure(this.#pool, timestamps);
      return statement();
    }
  }

  async #uncount(client: pg.PoolClient, pipelineId: string, count: number): Promise<void> {
    await client.query(
      "update inference_pipeline set total_records_count = greatest(coalesce(total_records_count, 0) - $2, 0) where id = $1",
      [pipelineId, count],
    );
  }
}
