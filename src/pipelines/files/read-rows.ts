import type { JsonObject } from "@bufbuild/protobuf";
import { arrowRows } from "./arrow.ts";
import { csvRows } from "./csv.ts";
import type { DataFileFormat } from "./format.ts";
import { jsonlRows } from "./jsonl.ts";
import { Meter, RowBatches, type ReadLimits } from "./limits.ts";

export { dataFileFormat, type DataFileFormat } from "./format.ts";
export type { ReadLimits } from "./limits.ts";

function checkLimits(limits: ReadLimits): void {
  for (const [name, value] of Object.entries(limits)) {
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 1)) throw new RangeError(`limits.${name} must be a positive integer`);
  }
}

/**
 * The rows of an uploaded file (CSV, JSON Lines or Arrow IPC), as plain JSON objects (column name
 * to value, as data-stream takes them), in batches of at most batchSize, in file order. The source
 * is read as the batches are taken, never held whole (but for the Arrow file format; see
 * arrowRows), in time linear in its size. A file that breaks a rule or a limit is a 400
 * (invalidArgument) naming the line or row and what is wrong, thrown when reading reaches it: a
 * caller that must load all rows or none keeps what it was given until the end. Stopping early
 * (return() or a throw in the loop) closes the source.
 */
export async function* readRows(source: AsyncIterable<Uint8Array>, format: DataFileFormat, limits: ReadLimits): AsyncGenerator<JsonObject[]> {
  checkLimits(limits);
  const meter = new Meter(limits);
  const bytes = meter.read(source);
  const batches = new RowBatches(limits);
  try {
    switch (format) {
      case "csv":
        yield* csvRows(bytes, batches, meter);
        return;
      case "jsonl":
        yield* jsonlRows(bytes, batches);
        return;
      case "arrow":
        yield* arrowRows(bytes, batches, meter);
        return;
    }
  } finally {
    // Closes the source now, whoever stopped: apache-arrow does not close what it reads from, and
    // csv-parse's streams close theirs only on a later tick.
    await bytes.return(undefined);
  }
}
