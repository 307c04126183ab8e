import type { DataConfig } from "../../gen/warden/pipelines/v1/data_pb.js";
import { invalidArgument } from "../platform/errors.ts";
import { dataFileFormat, readRows } from "./files/read-rows.ts";
import { firstOfEachId } from "./ingest.ts";
import type { PipelineTarget } from "./queries.ts";
import { dataConfigToJson, streamMapping } from "./rows/config.ts";
import { normalizeRows, rowPatch } from "./rows/normalize.ts";
import type { RowStore } from "./rows/row-store.ts";

/** An uploaded object, opened for reading (src/storage). */
export interface OpenedObject {
  objectName: string;
  size: number;
  body: AsyncIterable<Uint8Array>;
}

/** What loads read files from: storage, private per workspace, and the caps of one file. */
export interface DataFiles {
  objects: {
    open(workspaceId: string, storageUri: string, options: { maxBytes: number; signal?: AbortSignal }): Promise<OpenedObject>;
  };
  maxBytes: number;
  maxRows: number;
}

export interface LoadRequest {
  storageUri: string;
  config: DataConfig;
  merge: boolean;
  signal?: AbortSignal;
}

/** Rows per insert or merge statement while a file loads. */
const LOAD_BATCH = 1000;

/** The first chunk, to tell the format by, and the whole stream again. */
async function peek(chunks: AsyncIterator<Uint8Array>): Promise<{ head: Uint8Array; body: AsyncIterable<Uint8Array> }> {
  const first = await chunks.next();
  const head = first.done ? new Uint8Array() : first.value;
  return {
    head,
    body: (async function* () {
      if (!first.done) yield first.value;
      for (let next = await chunks.next(); !next.done; next = await chunks.next()) yield next.value;
    })(),
  };
}

/**
 * Loads a CSV, JSONL or Arrow IPC file from storage into a pipeline, in one transaction: every row,
 * or none and a 400 that names the row at fault. With `merge`, each row updates the stored row with
 * its inference ID instead, and an ID the pipeline does not have fails the load.
 */
export async function loadRows(files: DataFiles, store: RowStore, pipeline: PipelineTarget, request: LoadRequest): Promise<void> {
  const mapping = streamMapping(request.config, pipeline.taskType, { merge: request.merge });
  const object = await files.objects.open(pipeline.workspaceId, request.storageUri, { maxBytes: files.maxBytes, signal: request.signal });
  const chunks = object.body[Symbol.asyncIterator]();
  // However the load ends (a bad row, an unknown format, the database), the object is let go: a
  // local file left half read stays open until a garbage collection closes it.
  try {
    const { head, body } = await peek(chunks);
    // Arrow is told by its bytes, whatever the name: the Python SDK uploads a CSV under the .arrow name it asked for.
    const format = dataFileFormat(object.objectName, head);
    if (!format) throw invalidArgument("The file is not CSV, JSON Lines or Arrow IPC");
    const now = Date.now() / 1000;
    const config = request.merge ? undefined : dataConfigToJson(request.config);
    await store.write(pipeline.id, { config }, async (writer) => {
      let offset = 0;
      const limits = { maxBytes: files.maxBytes, maxRows: files.maxRows, batchSize: LOAD_BATCH };
      for await (const batch of readRows(body, format, limits)) {
        const where = (i: number) => `row ${offset + i + 1} of the file`;
        if (request.merge) {
          const missing = await writer.merge(batch.map((row, i) => rowPatch(row, mapping, now, where(i))), mapping);
          if (missing.length > 0) {
            throw invalidArgument(`${missing.length} rows of the file name inference IDs that the pipeline does not have, such as "${missing[0]}"; nothing was merged`);
          }
        } else {
          await writer.insert(firstOfEachId(normalizeRows(batch, mapping, now, where)), mapping);
        }
        offset += batch.length;
      }
      if (offset === 0) throw invalidArgument("The file holds no rows");
    });
  } finally {
    await chunks.return?.();
  }
}
