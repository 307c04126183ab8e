import { Buffer } from "node:buffer";
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { DataType, TimeUnit } from "apache-arrow";
import { invalidArgument } from "../../platform/errors.ts";
import { MAX_DEPTH, checkColumnName, shown } from "./storable.ts";

/** Turns one value, as apache-arrow's Vector.get returns it, into plain JSON. */
export type Convert = (value: unknown) => JsonValue;

/** A value Warden cannot store; the reader names its row and column. */
export class ValueError extends Error {}

/** Counts characters of row JSON (see Meter.spend). */
export type Spend = (size: number) => void;

const SECONDS_PER_UNIT: Record<TimeUnit, number> = {
  [TimeUnit.SECOND]: 1,
  [TimeUnit.MILLISECOND]: 1e-3,
  [TimeUnit.MICROSECOND]: 1e-6,
  [TimeUnit.NANOSECOND]: 1e-9,
};

/** A 64-bit integer as a number when that keeps every digit, else as its decimal text. */
function bigintValue(value: bigint): number | string {
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : String(value);
}

/**
 * A decimal, from the little-endian 32-bit words of its two's-complement integer and its scale,
 * as the nearest number (through its exact text, so that 0.1 is 0.1).
 */
function decimalValue(words: ArrayLike<number>, scale: number): number {
  let integer = 0n;
  for (let i = words.length - 1; i >= 0; i--) integer = (integer << 32n) | BigInt(words[i]! >>> 0);
  if (words.length > 0 && (words[words.length - 1]! & 0x80000000) !== 0) integer -= 1n << BigInt(32 * words.length);
  if (scale <= 0) return Number(integer * 10n ** BigInt(-scale));
  const negative = integer < 0n;
  const digits = (negative ? -integer : integer).toString().padStart(scale + 1, "0");
  return Number(`${negative ? "-" : ""}${digits.slice(0, -scale)}.${digits.slice(-scale)}`);
}

function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

/**
 * Field names of a struct or a schema: checked as column names, and unique, since a JSON object
 * can hold each key once.
 */
export function fieldNames(fields: readonly { name: string }[], where: string): string[] {
  const seen = new Set<string>();
  return fields.map(({ name }, i) => {
    checkColumnName(name, `Field ${i + 1} of ${where}`);
    if (seen.has(name)) throw invalidArgument(`${where[0]!.toUpperCase()}${where.slice(1)} has two fields named ${shown(name)}`);
    seen.add(name);
    return name;
  });
}

/**
 * The converter for a column of `type`, built once per schema. Integers past 2^53 become text;
 * NaN and infinite floats null (JSON has neither); decimals numbers; timestamps and dates UNIX
 * seconds (the pipeline's timestamp column is UNIX seconds), times of day and durations seconds;
 * binary base64 text; lists arrays; structs and maps objects (a map key that is not text is its
 * JSON); dictionary-encoded values their dictionary value. Unions and intervals have no plain JSON
 * form and are refused, by column. Each value spends its rough JSON size.
 */
export function converterOf(type: DataType, spend: Spend, column: string, depth = 1): Convert {
  if (depth > MAX_DEPTH) throw invalidArgument(`Arrow column ${shown(column)} nests deeper than ${MAX_DEPTH} levels`);
  const convert = valueConverterOf(type, spend, column, depth);
  return (value) => {
    if (value === null || value === undefined) {
      spend(4);
      return null;
    }
    return convert(value);
  };
}

function valueConverterOf(type: DataType, spend: Spend, column: string, depth: number): Convert {
  if (DataType.isNull(type)) return () => null;
  if (DataType.isBool(type)) {
    return (value) => {
      spend(5);
      return value as boolean;
    };
  }
  if (DataType.isInt(type)) {
    return (value) => {
      spend(8);
      return typeof value === "bigint" ? bigintValue(value) : (value as number);
    };
  }
  if (DataType.isFloat(type)) {
    return (value) => {
      spend(8);
      return Number.isFinite(value) ? (value as number) : null;
    };
  }
  if (DataType.isDecimal(type)) {
    const scale = type.scale;
    return (value) => {
      spend(8);
      return decimalValue(value as ArrayLike<number>, scale);
    };
  }
  // apache-arrow reads dates and timestamps of any unit as milliseconds since the epoch.
  if (DataType.isDate(type) || DataType.isTimestamp(type)) {
    return (value) => {
      spend(8);
      return (value as number) / 1000;
    };
  }
  if (DataType.isTime(type) || DataType.isDuration(type)) {
    const seconds = SECONDS_PER_UNIT[type.unit];
    return (value) => {
      spend(8);
      return Number(value as number | bigint) * seconds;
    };
  }
  if (DataType.isUtf8(type) || DataType.isLargeUtf8(type) || DataType.isUtf8View(type)) {
    return (value) => {
      const text = value as string;
      if (text.includes("\u0000")) throw new ValueError("the value contains a NUL character (U+0000), which PostgreSQL cannot store");
      spend(text.length + 2);
      return text;
    };
  }
  if (DataType.isBinary(type) || DataType.isLargeBinary(type) || DataType.isFixedSizeBinary(type) || DataType.isBinaryView(type)) {
    return (value) => {
      const text = base64(value as Uint8Array);
      spend(text.length + 2);
      return text;
    };
  }
  if (DataType.isList(type) || DataType.isLargeList(type) || DataType.isFixedSizeList(type)) {
    const element = converterOf(type.children[0]!.type, spend, column, depth + 1);
    return (value) => {
      spend(2);
      const array: JsonValue[] = [];
      for (const item of value as Iterable<unknown>) {
        spend(1);
        array.push(element(item));
      }
      return array;
    };
  }
  if (DataType.isStruct(type)) {
    const names = fieldNames(type.children, `the struct of Arrow column ${shown(column)}`);
    const fields = type.children.map((field) => converterOf(field.type, spend, column, depth + 1));
    const keysSize = names.reduce((size, name) => size + name.length + 4, 2);
    return (value) => {
      spend(keysSize);
      const entries: [string, JsonValue][] = [];
      let i = 0;
      for (const [, item] of value as Iterable<[unknown, unknown]>) {
        entries.push([names[i]!, fields[i]!(item)]);
        i++;
      }
      return Object.fromEntries(entries) as JsonObject;
    };
  }
  if (DataType.isMap(type)) {
    // A map's one child is the struct of its entries: key, then value.
    const [keyField, valueField] = type.children[0]!.type.children;
    const key = converterOf(keyField!.type, spend, column, depth + 1);
    const item = converterOf(valueField!.type, spend, column, depth + 1);
    return (value) => {
      spend(2);
      const entries: [string, JsonValue][] = [];
      for (const [k, v] of value as Iterable<[unknown, unknown]>) {
        const keyValue = key(k);
        const name = typeof keyValue === "string" ? keyValue : JSON.stringify(keyValue);
        if (name.includes("\u0000")) throw new ValueError("a key in the value contains a NUL character (U+0000), which PostgreSQL cannot store");
        spend(4);
        entries.push([name, item(v)]);
      }
      return Object.fromEntries(entries) as JsonObject;
    };
  }
  // apache-arrow decodes a dictionary-encoded value to the dictionary's value.
  if (DataType.isDictionary(type)) return valueConverterOf(type.dictionary, spend, column, depth);
  throw invalidArgument(`Arrow column ${shown(column)} has the type ${String(type)}, which Warden cannot read as JSON`);
}
