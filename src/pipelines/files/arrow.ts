import { isUtf8 } from "node:buffer";
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import { DataType, RecordBatchReader, type Data, type RecordBatch, type Vector } from "apache-arrow";
import { invalidArgument } from "../../platform/errors.ts";
import { ValueError, converterOf, fieldNames, type Convert } from "./arrow-values.ts";
import type { Meter, RowBatches } from "./limits.ts";
import { shown } from "./storable.ts";

const MAX_MESSAGE = 300;

function messageOf(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}…` : message;
}

/**
 * apache-arrow decodes text without checking it, patching bad bytes with U+FFFD: the text buffers
 * of a column (its children's and its dictionary's too) are checked whole instead, each once, since
 * later batches of a stream share their dictionaries.
 */
function checkText(data: Data, column: string, checked: WeakSet<object>): void {
  const stack: Data[] = [data];
  for (let current = stack.pop(); current !== undefined; current = stack.pop()) {
    if (checked.has(current)) continue;
    checked.add(current);
    const type: DataType = current.type;
    const buffers: readonly Uint8Array[] =
      DataType.isUtf8(type) || DataType.isLargeUtf8(type) ? [current.values as Uint8Array] : DataType.isUtf8View(type) ? current.variadicBuffers : [];
    for (const buffer of buffers) {
      if (buffer && !isUtf8(buffer)) throw invalidArgument(`Arrow column ${shown(column)} holds text that is not valid UTF-8`);
    }
    stack.push(...current.children);
    if (current.dictionary) stack.push(...current.dictionary.data);
  }
}

/**
 * Rows of an Arrow IPC stream (what the Python SDK uploads) or file (magic "ARROW1"), by the
 * official apache-arrow reader. The stream format is read one message at a time. The file format
 * keeps its index in a footer at the end, so apache-arrow buffers the whole file before the first
 * row: at most maxBytes, since the meter cuts the source off there.
 */
export async function* arrowRows(bytes: AsyncIterable<Uint8Array>, batches: RowBatches, meter: Meter): AsyncGenerator<JsonObject[]> {
  let reader: Awaited<ReturnType<typeof RecordBatchReader.from>>;
  let names: string[];
  let converters: Convert[];
  try {
    reader = await RecordBatchReader.from(bytes);
    await reader.open();
    // No schema: the source was empty.
    const fields = reader.schema?.fields ?? [];
    names = fieldNames(fields, "the Arrow schema");
    converters = fields.map((field) => converterOf(field.type, (size) => meter.spend(size), field.name));
  } catch (err) {
    throw asFileError(err, meter);
  }
  const keysSize = names.reduce((size, name) => size + name.length + 4, 2);
  const checked = new WeakSet<object>();
  let rowNumber = 0;

  /** The row at `index` of a batch, or a 400 naming the row and column at fault. */
  const rowAt = (columns: Vector[], index: number): JsonObject => {
    rowNumber++;
    meter.spend(keysSize);
    const entries: [string, JsonValue][] = [];
    let j = 0;
    try {
      for (; j < columns.length; j++) entries.push([names[j]!, converters[j]!(columns[j]!.get(index))]);
    } catch (err) {
      if (err instanceof ConnectError) throw err;
      const where = `Row ${rowNumber}, column ${shown(names[j]!)}`;
      throw invalidArgument(err instanceof ValueError ? `${where}: ${err.message}` : `${where} could not be read: ${messageOf(err)}`);
    }
    return Object.fromEntries(entries) as JsonObject;
  };

  const iterator = reader[Symbol.asyncIterator]();
  try {
    for (;;) {
      let next: IteratorResult<RecordBatch>;
      try {
        next = await iterator.next();
      } catch (err) {
        throw asFileError(err, meter);
      }
      if (next.done) break;
      const batch = next.value;
      const columns = names.map((name, j) => {
        const column = batch.getChildAt(j);
        if (column === null) throw invalidArgument(`An Arrow record batch has no column ${shown(name)}`);
        for (const data of column.data) checkText(data, name, checked);
        return column;
      });
      for (let index = 0; index < batch.numRows; index++) {
        const full = batches.add(rowAt(columns, index));
        if (full) yield full;
      }
    }
  } finally {
    await reader.cancel();
  }
  const rest = batches.rest();
  if (rest) yield rest;
}

/** What the reader threw: ours and the source's as they are, apache-arrow's as a 400. */
function asFileError(err: unknown, meter: Meter): unknown {
  if (err instanceof ConnectError || meter.isSourceError(err)) return err;
  return invalidArgument(`The Arrow IPC data could not be read: ${messageOf(err)}`);
}
