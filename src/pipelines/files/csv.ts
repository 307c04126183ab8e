import { Readable, pipeline } from "node:stream";
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import { CsvError, parse, type Info } from "csv-parse";
import { invalidArgument } from "../../platform/errors.ts";
import { cellValue } from "./cells.ts";
import type { Meter, RowBatches } from "./limits.ts";
import { checkColumnName, checkJsonValue, checkText, shown } from "./storable.ts";
import { validUtf8 } from "./utf8.ts";

/** A parse error quotes the field it stopped in; a field may be megabytes. */
const MAX_MESSAGE = 300;

/** The header's names, each checked; an empty, duplicate, NUL-holding or overlong name is a 400. */
function headerOf(record: string[]): string[] {
  const seen = new Set<string>();
  record.forEach((name, i) => {
    // pandas' to_csv writes its index as a first column with no name.
    const hint = i === 0 ? " (a pandas index? write the file with to_csv(index=False))" : "";
    if (name === "") throw invalidArgument(`Column ${i + 1} of the CSV header has no name${hint}`);
    checkColumnName(name, `Column ${i + 1} of the CSV header`);
    if (seen.has(name)) throw invalidArgument(`The CSV header names the column ${shown(name)} twice`);
    seen.add(name);
  });
  return record;
}

function asFileError(err: unknown): unknown {
  if (err instanceof CsvError) {
    const message = err.message.length > MAX_MESSAGE ? `${err.message.slice(0, MAX_MESSAGE)}…` : err.message;
    return invalidArgument(`The CSV file could not be parsed: ${message}`);
  }
  return err;
}

/**
 * Rows of an RFC 4180 CSV file (quoted fields with commas, quotes and line breaks; CRLF or LF; a
 * UTF-8 BOM skipped), streamed through csv-parse. The first line is the header; blank lines are
 * skipped; cells are typed by cellValue.
 */
export async function* csvRows(bytes: AsyncIterable<Uint8Array>, batches: RowBatches, meter: Meter): AsyncGenerator<JsonObject[]> {
  const parser = parse({ bom: true, info: true, skip_empty_lines: true, relax_column_count: true });
  const records = pipeline(Readable.from(validUtf8(bytes), { objectMode: false }), parser, () => {
    // Errors reach the loop below through the parser; stopping early destroys both streams.
  }) as AsyncIterable<{ record: string[]; info: Info }>;
  let header: string[] | undefined;
  let headerSize = 0;
  // csv-parse counts the lines up to the end of each record; a record starts after the previous one
  // and the blank lines it skipped.
  let linesBefore = 0;
  let blankBefore = 0;
  let rowNumber = 0;
  try {
    for await (const { record, info } of records) {
      const line = linesBefore + 1 + (info.empty_lines - blankBefore);
      linesBefore = info.lines;
      blankBefore = info.empty_lines;
      if (header === undefined) {
        header = headerOf(record);
        headerSize = header.reduce((size, name) => size + name.length + 4, 2);
        continue;
      }
      if (record.length !== header.length) {
        const cells = `${record.length} cell${record.length === 1 ? "" : "s"}`;
        throw invalidArgument(`Line ${line} of the CSV file has ${cells}; the header has ${header.length}`);
      }
      rowNumber++;
      const where = `Row ${rowNumber} (line ${line})`;
      let size = headerSize;
      const entries: [string, JsonValue][] = [];
      for (let j = 0; j < record.length; j++) {
        const text = record[j]!;
        size += text.length + 2;
        const value = cellValue(text);
        if (typeof value === "string") checkText(value, where, header[j]!);
        else if (typeof value === "object" && value !== null) checkJsonValue(value, where, header[j]!);
        entries.push([header[j]!, value]);
      }
      meter.spend(size);
      // fromEntries, not assignment: a column named __proto__ stays a column.
      const full = batches.add(Object.fromEntries(entries) as JsonObject);
      if (full) yield full;
    }
  } catch (err) {
    throw err instanceof ConnectError ? err : asFileError(err);
  } finally {
    parser.destroy();
  }
  const rest = batches.rest();
  if (rest) yield rest;
}
