import type { JsonValue } from "@bufbuild/protobuf";
import { invalidArgument } from "../../platform/errors.ts";
import { findInJson, MAX_JSON_DEPTH } from "../../platform/json.ts";

/** Values nested deeper than this are refused, as they are in request bodies (src/platform/json.ts). */
export const MAX_DEPTH = MAX_JSON_DEPTH;

/**
 * A CSV or Arrow column name is repeated in every row's JSON: a name of a megabyte over a million
 * rows would be a terabyte. Data-stream configs cap column names at the same length.
 */
export const MAX_COLUMN_NAME_LENGTH = 1024;

/**
 * Whether JSON text nests arrays and objects deeper than `max`, by one linear scan that skips
 * strings. Run before JSON.parse, which slows down more than linearly on text millions deep.
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // a backslash: skip what it escapes
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** A name as an error message shows it: quoted, escaped (a NUL shows as \u0000), and cut short. */
export function shown(name: string): string {
  return JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}…` : name);
}

const NUL = "\u0000";
const NUL_WHY = "a NUL character (U+0000), which PostgreSQL cannot store";

/** A column name from a CSV header or an Arrow schema: not empty, not too long, no NUL. */
export function checkColumnName(name: string, where: string): void {
  if (name === "") throw invalidArgument(`${where} has no name`);
  if (name.includes(NUL)) throw invalidArgument(`${where}, ${shown(name)}, contains ${NUL_WHY}`);
  if (name.length > MAX_COLUMN_NAME_LENGTH) {
    throw invalidArgument(`${where}, ${shown(name)}, is longer than ${MAX_COLUMN_NAME_LENGTH} characters`);
  }
}

/** A string value of a column: no NUL. */
export function checkText(text: string, where: string, column: string): void {
  if (text.includes(NUL)) throw invalidArgument(`${where}, column ${shown(column)}: the value contains ${NUL_WHY}`);
}

/**
 * A value parsed from JSON (a JSONL line's, or a CSV cell that held an array or object): no NUL in
 * any string or key, and at most MAX_DEPTH levels (the value itself is the first). Linear in the
 * size of the value, however deep (src/platform/json.ts).
 */
export function checkJsonValue(value: JsonValue, where: string, column: string): void {
  const fault = findInJson(value, (current, depth, isKey) => {
    if (typeof current === "string") {
      if (!current.includes(NUL)) return undefined;
      return isKey ? `a key in the value contains ${NUL_WHY}` : `the value contains ${NUL_WHY}`;
    }
    return current !== null && typeof current === "object" && depth >= MAX_DEPTH ? `the value nests deeper than ${MAX_DEPTH} levels` : undefined;
  });
  if (fault) throw invalidArgument(`${where}, column ${shown(column)}: ${fault.problem}`);
}

/** A JSON object read as a whole row (a JSONL line): its column names and values. */
export function checkJsonRow(row: { [key: string]: JsonValue }, where: string): void {
  for (const column in row) {
    if (column.includes(NUL)) throw invalidArgument(`${where}: the column name ${shown(column)} contains ${NUL_WHY}`);
    checkJsonValue(row[column]!, where, column);
  }
}
