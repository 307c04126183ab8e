import type { JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import type { DataConfig } from "../../gen/warden/pipelines/v1/data_pb.js";
import { invalidArgument } from "../platform/errors.ts";
import { pipelineTarget, type PipelineTarget } from "./queries.ts";
import { dataConfigFromJson, dataConfigToJson, streamMapping, type ColumnMapping } from "./rows/config.ts";
import { normalizeRows } from "./rows/normalize.ts";
import type { RowStore, SerializedRow } from "./rows/row-store.ts";

const MAX_CACHED_TARGETS = 10_000;

/** The most rows one data-stream call (or one gateway write) takes. */
const MAX_STREAM_ROWS = 1000;

/** Rows with an inference ID seen earlier in the same batch are dropped: the first one counts. */
export function firstOfEachId(rows: SerializedRow[]): SerializedRow[] {
  const seen = new Set<string>();
  return rows.filter((row) => {
    if (seen.has(row.inferenceId)) return false;
    seen.add(row.inferenceId);
    return true;
  });
}

/**
 * Rows in: the one path by which data-stream, and the gateway's own traffic, store rows. A batch
 * is checked whole before anything is written, and written in one transaction: all or nothing.
 */
export class RowIngest {
  readonly #orm: MikroORM;
  readonly #store: RowStore;
  /**
   * The gateway writes to the same few pipelines batch after batch. What is cached never changes
   * (a pipeline's workspace, its project's task type), and whether the pipeline still exists is
   * checked by every write anyway (RowStore.write: 404 once it is gone, and then it is forgotten).
   */
  readonly #targets = new Map<string, PipelineTarget>();
  /** Configs as the gateway passes them, by identity: the same object each time. */
  readonly #configs = new WeakMap<JsonObject, DataConfig>();

  constructor(orm: MikroORM, store: RowStore) {
    this.#orm = orm;
    this.#store = store;
  }

  /**
   * For writers inside Warden (the gateway's traffic): rows it made itself, already as JSON, with
   * their inference IDs and timestamps; the pipeline by ID alone; the config as plain JSON. They
   * are stored as data-stream stores rows, canonical columns included, but not checked again as a
   * caller's rows are: the writer makes them of the right types, without NUL characters. (A row
   * that breaks that is refused by PostgreSQL, and the writer drops it alone.)
   */
  async stream(pipelineId: string, config: JsonObject, rows: SerializedRow[]): Promise<void> {
    if (rows.length === 0) return;
    checkBatchSize(rows.length);
    let target = this.#targets.get(pipelineId);
    if (!target) {
      target = await pipelineTarget(this.#orm.em.fork(), pipelineId);
      if (this.#targets.size >= MAX_CACHED_TARGETS) this.#targets.clear();
      this.#targets.set(pipelineId, target);
    }
    let parsed = this.#configs.get(config);
    if (!parsed) {
      parsed = dataConfigFromJson(config);
      this.#configs.set(config, parsed);
    }
    try {
      await this.#insert(target, parsed, streamMapping(parsed, target.taskType), rows);
    } catch (err) {
      if (err instanceof ConnectError && err.code === Code.NotFound) this.#targets.delete(pipelineId);
      throw err;
    }
  }

  /** Stores a data-stream batch; returns how many rows were new (a retried batch adds none). */
  async streamTo(target: PipelineTarget, config: DataConfig, rows: JsonObject[], now = Date.now() / 1000): Promise<number> {
    if (rows.length === 0) throw invalidArgument("rows must hold at least one row");
    checkBatchSize(rows.length);
    const mapping = streamMapping(config, target.taskType);
    return this.#insert(target, config, mapping, normalizeRows(rows, mapping, now));
  }

  /** One batch, in one transaction; the config is kept on the pipeline as its latest. */
  #insert(target: PipelineTarget, config: DataConfig, mapping: ColumnMapping, rows: SerializedRow[]): Promise<number> {
    const unique = firstOfEachId(rows);
    const options = { timestamps: unique.map((row) => row.timestamp), config: dataConfigToJson(config) };
    return this.#store.write(target.id, options, async (writer) => {
      await writer.insert(unique, mapping);
      return writer.added;
    });
  }
}

function checkBatchSize(rows: number): void {
  if (rows > MAX_STREAM_ROWS) throw invalidArgument(`rows must hold at most ${MAX_STREAM_ROWS} rows; send more in several calls`);
}
