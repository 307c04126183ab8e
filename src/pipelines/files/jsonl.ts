import { Buffer } from "node:buffer";
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { invalidArgument } from "../../platform/errors.ts";
import type { RowBatches } from "./limits.ts";
import { MAX_DEPTH, checkJsonRow, nestsDeeperThan } from "./storable.ts";

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
/** V8 quotes the text around a JSON syntax error; keep the message short all the same. */
const MAX_MESSAGE = 200;

// Fatal: a line that is not UTF-8 is refused, not patched with U+FFFD. ignoreBOM: a BOM is removed
// by hand, and only at the start of the file.
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function hasBom(bytes: Uint8Array): boolean {
  return bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
}

/** The row on a line, or undefined for a blank line; a 400 naming the line for anything else. */
function rowOf(bytes: Uint8Array, line: number): JsonObject | undefined {
  let end = bytes.length;
  if (end > 0 && bytes[end - 1] === CARRIAGE_RETURN) end--;
  const start = line === 1 && hasBom(bytes) ? 3 : 0;
  let text: string;
  try {
    text = decoder.decode(bytes.subarray(start, end));
  } catch {
    throw invalidArgument(`Line ${line} of the file is not valid UTF-8`);
  }
  if (text.trim() === "") return undefined;
  // The row is the first level; its values may nest MAX_DEPTH levels below it.
  if (nestsDeeperThan(text, MAX_DEPTH + 1)) throw invalidArgument(`Line ${line} of the file nests values deeper than ${MAX_DEPTH} levels`);
  let value: JsonValue;
  try {
    value = JSON.parse(text) as JsonValue;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw invalidArgument(`Line ${line} of the file is not valid JSON: ${message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}…` : message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw invalidArgument(`Line ${line} of the file is not a JSON object`);
  }
  checkJsonRow(value, `Line ${line}`);
  return value;
}

/**
 * Rows of a JSON Lines file: one JSON object per line, blank lines skipped. Lines are cut at
 * line feeds as the bytes arrive; the part of a line still to come is kept as a list of pieces and
 * joined once when its end arrives, so a line of any length costs time linear in its length.
 */
export async function* jsonlRows(bytes: AsyncIterable<Uint8Array>, batches: RowBatches): AsyncGenerator<JsonObject[]> {
  let pieces: Uint8Array[] = [];
  let piecesLength = 0;
  let line = 0;
  for await (const chunk of bytes) {
    let start = 0;
    for (let end = chunk.indexOf(NEWLINE); end !== -1; end = chunk.indexOf(NEWLINE, start)) {
      let text = chunk.subarray(start, end);
      if (piecesLength > 0) {
        pieces.push(text);
        text = Buffer.concat(pieces, piecesLength + text.length);
        pieces = [];
        piecesLength = 0;
      }
      start = end + 1;
      const row = rowOf(text, ++line);
      const full = row && batches.add(row);
      if (full) yield full;
    }
    if (start < chunk.length) {
      // A copy: the source may reuse its chunk once the next one is asked for.
      pieces.push(new Uint8Array(chunk.subarray(start)));
      piecesLength += chunk.length - start;
    }
  }
  if (piecesLength > 0) {
    const row = rowOf(Buffer.concat(pieces, piecesLength), ++line);
    const full = row && batches.add(row);
    if (full) yield full;
  }
  const rest = batches.rest();
  if (rest) yield rest;
}
