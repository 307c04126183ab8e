import type { JsonObject } from "@bufbuild/protobuf";
import type { MikroORM } from "@mikro-orm/postgresql";
import type { DataConfig } from "../../gen/warden/pipelines/v1/data_pb.js";
import { invalidArgument } from "../platform/errors.ts";
import { pipelineTarget, type PipelineTarget } from "./queries.ts";
import { dataConfigFromJson, dataConfigToJson, streamMapping } from "./rows/config.ts";
import { normalizeRows, type StoredRow } from "./rows/normalize.ts";
import type { RowStore } from "./rows/row-store.ts";

/** The most rows one data-stream call (or one gateway write) takes. */
export const MAX_STREAM_ROWS = 1000;

/** Rows with an inference ID seen earlier in the same batch are dropped: the first one counts. */
export function firstOfEachId(rows: StoredRow[]): StoredRow[] {
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

  constructor(orm: MikroORM, store: RowStore) {
    this.#orm = orm;
    this.#store = store;
  }

  /** For writers inside Warden (the gateway): the pipeline by ID alone, the config as plain JSON. */
  async stream(pipelineId: string, config: JsonObject, rows: JsonObject[]): Promise<void> {
    const target = await pipelineTarget(this.#orm.em.fork(), pipelineId);
    await this.streamTo(target, dataConfigFromJson(config), rows);
  }

  /** Stores a data-stream batch; returns how many rows were new (a retried batch adds none). */
  async streamTo(target: PipelineTarget, config: DataConfig, rows: JsonObject[], now = Date.now() / 1000): Promise<number> {
    if (rows.length === 0) throw invalidArgument("rows must hold at least one row");
    if (rows.length > MAX_STREAM_ROWS) throw invalidArgument(`rows must hold at most ${MAX_STREAM_ROWS} rows; send more in several calls`);
    const mapping = streamMapping(config, target.taskType);
    const stored = firstOfEachId(normalizeRows(rows, mapping, now));
    const options = { timestamps: stored.map((row) => row.timestamp), config: dataConfigToJson(config) };
    return this.#store.write(target.id, options, async (writer) => {
      await writer.insert(stored);
      return writer.added;
    });
  }
}
