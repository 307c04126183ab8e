import type { JsonValue } from "@bufbuild/protobuf";
import { MAX_DEPTH, nestsDeeperThan } from "./storable.ts";

/** A JSON number literal, whole: no sign but minus, no leading zeros, no spaces, no hex, no Infinity or NaN. */
const NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;
const INTEGER = /^-?[0-9]+$/;

/**
 * The value of a CSV cell. CSV has only text, and pandas writes numbers, booleans and missing
 * values as text, so: an empty cell is null; a JSON number literal is a number (but an integer
 * past 2^53, such as a long numeric ID, stays text rather than lose digits, and so does a literal
 * too large for a double); true/false/True/False are booleans; text that starts with [ or { and
 * parses as JSON is that array or object (unless it nests deeper than MAX_DEPTH: no row can hold
 * that, and text it was). Everything else is the text. Linear in the cell's length.
 */
export function cellValue(text: string): JsonValue {
  if (text === "") return null;
  const first = text.charCodeAt(0);
  if (first === 0x2d || (first >= 0x30 && first <= 0x39)) {
    if (!NUMBER.test(text)) return text;
    const number = Number(text);
    if (!Number.isFinite(number)) return text;
    if (!Number.isSafeInteger(number) && INTEGER.test(text)) return text;
    return number;
  }
  if (text === "true" || text === "True") return true;
  if (text === "false" || text === "False") return false;
  if ((first === 0x5b || first === 0x7b) && !nestsDeeperThan(text, MAX_DEPTH)) {
    try {
      const parsed = JSON.parse(text) as JsonValue;
      if (typeof parsed === "object" && parsed !== null) return parsed;
    } catch {
      // Not JSON (pandas writes a Python list as ['a', 'b']): the text it is.
    }
  }
  return text;
}
