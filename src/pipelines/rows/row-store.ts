import type { JsonObject } from "@bufbuild/protobuf";
import type pg from "pg";
import { inTransaction } from "../../db/pools.ts";
import { notFound } from "../../platform/errors.ts";
import { filterSql, orderSql, type RowQuery } from "./filters.ts";
import type { ColumnMapping } from "./config.ts";
import { RowPartitions } from "./partitions.ts";
import { presentRow, rowColumns, type RowRecord } from "./present.ts";

/** What a late update or a merge changes in a stored row: the given canonical values, and `data` merged in. */
/**
 * What a late update or a merge changes in a stored row: `data` is merged in, and the canonical
 * columns the mapping names and `data` holds are read from it (the timestamp, which Warden may
 * have converted from milliseconds, comes as it is).
 */
export interface RowPatch {
  inferenceId: string;
  timestamp?: number;
  data: JsonObject;
}

/**
 * One JSON document per batch, read by PostgreSQL with jsonb_to_recordset: one parameter however
 * many rows. A row whose inference ID the pipeline has already is not stored again: the SDKs retry a POST
 * that timed out or failed with a 5xx, without an idempotency key, and a retried batch must not
 * count twice. (Two copies of one batch in flight at the same instant can still both land.)
 * The canonical columns are read from the row as sent, by the column names of the mapping
 * ($3 to $9; null when unmapped): `->>` gives a string as it is and any other value as its JSON,
 * as normalize.ts's checks expect.
 */
const insertSql = `
  insert into inference_row (pipeline_id, inference_id, ts, output, ground_truth, latency_ms, cost, num_tokens, session_id, user_id, data)
  select $1, r.i, to_timestamp(r.t), r.d ->> $3::text, r.d ->> $4::text, (r.d ->> $5::text)::float8, (r.d ->> $6::text)::float8,
         (r.d ->> $7::text)::float8, r.d ->> $8::text, r.d ->> $9::text, r.d
    from jsonb_to_recordset($2::jsonb) as r(i text, t float8, d jsonb)
   where not exists (select 1 from inference_row x where x.pipeline_id = $1 and x.inference_id = r.i)`;

// A column the mapping names ($3 to $9) that the patch's row holds replaces the stored one (an
// explicit null clears it); the others stay.
const mergeSql = `
  with patch as (
    select * from jsonb_to_recordset($2::jsonb) as r(i text, t float8, d jsonb)
  ), changed as (
    update inference_row row set
      data = row.data || patch.d,
      ts = coalesce(to_timestamp(patch.t), row.ts),
      output = case when patch.d ? $3::text then patch.d ->> $3::text else row.output end,
      ground_truth = case when patch.d ? $4::text then patch.d ->> $4::text else row.ground_truth end,
      latency_ms = case when patch.d ? $5::text then (patch.d ->> $5::text)::float8 else row.latency_ms end,
      cost = case when patch.d ? $6::text then (patch.d ->> $6::text)::float8 else row.cost end,
      num_tokens = case when patch.d ? $7::text then (patch.d ->> $7::text)::float8 else row.num_tokens end,
      session_id = case when patch.d ? $8::text then patch.d ->> $8::text else row.session_id end,
      user_id = case when patch.d ? $9::text then patch.d ->> $9::text else row.user_id end
    from patch
    where row.pipeline_id = $1 and row.inference_id = patch.i
    returning patch.i
  )
  select distinct patch.i as inference_id from patch where not exists (select 1 from changed where changed.i = patch.i)`;

/** Rows deleted per statement by retention and purges: each stays well inside the statement deadline. */
const deleteBatch = 5_000;

/** A row to insert: its inference ID and timestamp, and the row as sent, already as JSON text. */
export interface SerializedRow {
  inferenceId: string;
  /** UNIX seconds. */
  timestamp: number;
  json: string;
}

/** The batch as one JSON document, spliced from the rows' own JSON: no row is serialized twice. */
function insertDocument(rows: readonly SerializedRow[]): string {
  return `[${rows.map((row) => `{"i":${JSON.stringify(row.inferenceId)},"t":${row.timestamp},"d":${row.json}}`).join(",")}]`;
}

/** The column names the insert reads the canonical values from, in the order of $3 to $9. */
function canonicalSources(mapping: ColumnMapping): (string | null)[] {
  return [mapping.output, mapping.groundTruth, mapping.latency, mapping.cost, mapping.numOfTokens, mapping.sessionId, mapping.userId]
    .map((column) => column ?? null);
}

function patchRecord(patch: RowPatch): Record<string, unknown> {
  return { i: patch.inferenceId, t: patch.timestamp ?? null, d: patch.data };
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
  insert(rows: readonly SerializedRow[], mapping: ColumnMapping): Promise<void>;
  /** Merges each patch into the rows with its inference ID; returns the IDs that match no row. */
  merge(patches: readonly RowPatch[], mapping: ColumnMapping): Promise<string[]>;
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
        insert: async (rows, mapping) => {
          if (rows.length === 0) return;
          const timestamps = rows.map((row) => row.timestamp);
          await this.#partitions.ensure(this.#pool, timestamps);
          const params = [pipelineId, insertDocument(rows), ...canonicalSources(mapping)];
          const inserted = await this.#withPartitions(client, timestamps, () => client.query(insertSql, params));
          added += inserted.rowCount ?? 0;
        },
        merge: async (patches, mapping) => {
          if (patches.length === 0) return [];
          const moved = patches.flatMap((patch) => (patch.timestamp === undefined ? [] : [patch.timestamp]));
          await this.#partitions.ensure(this.#pool, moved);
          const params = [pipelineId, JSON.stringify(patches.map(patchRecord)), ...canonicalSources(mapping)];
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
