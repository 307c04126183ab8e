import {
  fromJson,
  getOption,
  isFieldSet,
  isMessage,
  ScalarType,
  toJson,
  type DescEnum,
  type DescField,
  type DescMessage,
  type JsonObject,
  type JsonValue,
  type MessageShape,
} from "@bufbuild/protobuf";
import { timestampDate, TimestampSchema } from "@bufbuild/protobuf/wkt";
import { field as fieldOption, json_value, type FieldRules } from "../../gen/warden/api/v1/annotations_pb.js";
import { invalidArgument } from "../platform/errors.ts";
import { findInJson, MAX_JSON_DEPTH } from "../platform/json.ts";

/**
 * The REST JSON of the contract differs from the protobuf JSON mapping in a few ways, all fixed
 * here and declared in the proto, never per route:
 * - enums are strings such as "llm-base" or "<=" (the `json_value` option);
 * - an unset field with presence renders as null, and so does an empty list marked `null_if_empty`;
 * - `write_only` fields are accepted and never rendered;
 * - 64-bit integers are JSON numbers;
 * - type errors name the field, as "thresholds[0].operator".
 */

const rulesCache = new Map<DescField, FieldRules | undefined>();

export function fieldRules(field: DescField): FieldRules | undefined {
  if (!rulesCache.has(field)) {
    rulesCache.set(field, getOption(field, fieldOption));
  }
  return rulesCache.get(field);
}

interface EnumAliases {
  toNumber: Map<string, number>;
  toAlias: Map<number, string>;
  allowed: string;
}
const enumCache = new Map<DescEnum, EnumAliases>();

function enumAliases(desc: DescEnum): EnumAliases {
  let aliases = enumCache.get(desc);
  if (!aliases) {
    const toNumber = new Map<string, number>();
    const toAlias = new Map<number, string>();
    for (const value of desc.values) {
      const alias = getOption(value, json_value);
      if (alias) {
        toNumber.set(alias, value.number);
        toAlias.set(value.number, alias);
      }
    }
    aliases = { toNumber, toAlias, allowed: [...toNumber.keys()].join(", ") };
    enumCache.set(desc, aliases);
  }
  return aliases;
}

const isWellKnown = (desc: DescMessage) => desc.typeName.startsWith("google.protobuf.");

// ---- requests ---------------------------------------------------------------------------

export interface DecodeOptions {
  rejectUnknownFields: boolean;
  /** Top-level fields that the route fills itself (path parameters, the update mask). */
  notInBody?: ReadonlySet<DescField>;
}

/** REST JSON body → protobuf JSON of `schema`. */
export function restBodyToProtoJson(schema: DescMessage, body: JsonObject, options: DecodeOptions): JsonObject {
  return objectToProto(schema, body, "", options);
}

function objectToProto(schema: DescMessage, input: JsonObject, prefix: string, options: DecodeOptions): JsonObject {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(input)) {
    const field = schema.fields.find((f) => f.jsonName === key || fieldRules(f)?.jsonAliases.includes(key));
    const name = prefix + key;
    if (!field || (prefix === "" && options.notInBody?.has(field))) {
      if (options.rejectUnknownFields) throw invalidArgument(`${name} is not an allowed property`);
      continue;
    }
    if (value === null) {
      // null is "not given", which a required list cannot be.
      if (field.fieldKind === "list" && fieldRules(field)?.requiredKey) throw invalidArgument(`${name} must be an array`);
      continue;
    }
    out[field.jsonName] = field.fieldKind === "list"
      ? listToProto(field, value, name, options)
      : field.fieldKind === "map"
        ? mapToProto(field, value, name)
        : singularToProto(field, value, name, options);
  }
  for (const field of schema.fields) {
    if (fieldRules(field)?.requiredKey && !(field.jsonName in input)) {
      throw invalidArgument(`${prefix}${field.jsonName} is required`);
    }
  }
  return out;
}

function listToProto(field: DescField & { fieldKind: "list" }, value: JsonValue, name: string, options: DecodeOptions): JsonValue {
  if (!Array.isArray(value)) throw invalidArgument(`${name} must be an array`);
  return value.map((item, i) => {
    const itemName = `${name}[${i}]`;
    switch (field.listKind) {
      case "scalar":
        return scalarToProto(field.scalar, item, itemName);
      case "enum":
        return enumToProto(field.enum, item, itemName);
      case "message":
        return messageToProto(field.message, item, itemName, options);
    }
  });
}

/** Maps with string keys and scalar values, such as `{"hate": 0.8}`. */
function mapToProto(field: DescField & { fieldKind: "map" }, value: JsonValue, name: string): JsonValue {
  if (!isObject(value)) throw invalidArgument(`${name} must be an object`);
  if (field.mapKind !== "scalar") throw invalidArgument(`${name} is not supported in REST bodies`);
  const out: JsonObject = {};
  for (const [key, item] of Object.entries(value)) out[key] = scalarToProto(field.scalar, item, `${name}.${key}`);
  return out;
}

function singularToProto(field: DescField, value: JsonValue, name: string, options: DecodeOptions): JsonValue {
  switch (field.fieldKind) {
    case "scalar":
      return scalarToProto(field.scalar, value, name);
    case "enum":
      return enumToProto(field.enum, value, name);
    case "message":
      return messageToProto(field.message, value, name, options);
    default:
      throw invalidArgument(`${name} is not supported in REST bodies`);
  }
}

function messageToProto(desc: DescMessage, value: JsonValue, name: string, options: DecodeOptions): JsonValue {
  if (isWellKnown(desc)) {
    if (desc.typeName === "google.protobuf.ListValue" && !Array.isArray(value)) {
      throw invalidArgument(`${name} must be an array`);
    }
    if (desc.typeName === "google.protobuf.Struct" && !isObject(value)) {
      throw invalidArgument(`${name} must be an object`);
    }
    checkJsonValue(value, name);
    return value;
  }
  if (!isObject(value)) throw invalidArgument(`${name} must be an object`);
  return objectToProto(desc, value, `${name}.`, options);
}

function enumToProto(desc: DescEnum, value: JsonValue, name: string): JsonValue {
  const aliases = enumAliases(desc);
  const number = typeof value === "string" ? aliases.toNumber.get(value) : undefined;
  if (number === undefined) throw invalidArgument(`${name} must be one of: ${aliases.allowed}`);
  return number;
}

function scalarToProto(scalar: ScalarType, value: JsonValue, name: string): JsonValue {
  switch (scalar) {
    case ScalarType.STRING:
      if (typeof value !== "string") throw invalidArgument(`${name} must be a string`);
      return value;
    case ScalarType.BOOL:
      if (typeof value !== "boolean") throw invalidArgument(`${name} must be a boolean`);
      return value;
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      if (typeof value !== "number" || !Number.isFinite(value)) throw invalidArgument(`${name} must be a number`);
      return value;
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      if (!Number.isInteger(value) || Math.abs(value as number) > 2 ** 31 - 1) {
        throw invalidArgument(`${name} must be an integer`);
      }
      return value;
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      if (!Number.isSafeInteger(value)) throw invalidArgument(`${name} must be an integer`);
      return value;
    default:
      throw invalidArgument(`${name} has a type that REST bodies do not support`);
  }
}

/**
 * A query string value → protobuf JSON for `field`. Lists are comma-separated, booleans are
 * `true`/`false`, enums are their REST strings.
 */
export function queryValueToProtoJson(field: DescField, raw: string, name: string): JsonValue {
  if (field.fieldKind === "list") {
    const items = raw.split(",").filter((item) => item !== "");
    if (field.listKind === "enum") return items.map((item) => enumToProto(field.enum, item, name));
    if (field.listKind === "scalar") return items.map((item) => queryScalar(field.scalar, item, name));
    throw invalidArgument(`${name} cannot be given in the query`);
  }
  if (field.fieldKind === "enum") return enumToProto(field.enum, raw, name);
  if (field.fieldKind === "scalar") return queryScalar(field.scalar, raw, name);
  if (field.fieldKind === "message" && field.message.typeName === "google.protobuf.Timestamp") {
    if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d{1,9})?)?(Z|[+-]\d\d:\d\d)$/.test(raw) || Number.isNaN(Date.parse(raw))) {
      throw invalidArgument(`${name} must be an ISO-8601 date-time, such as 2024-03-22T11:31:01Z`);
    }
    return new Date(raw).toISOString();
  }
  throw invalidArgument(`${name} cannot be given in the query`);
}

function queryScalar(scalar: ScalarType, raw: string, name: string): JsonValue {
  switch (scalar) {
    case ScalarType.STRING:
      return raw;
    case ScalarType.BOOL:
      if (raw !== "true" && raw !== "false") throw invalidArgument(`${name} must be true or false`);
      return raw === "true";
    default: {
      if (!/^-?\d+$/.test(raw)) throw invalidArgument(`${name} must be an integer`);
      const value = Number(raw);
      const max = scalar === ScalarType.INT32 || scalar === ScalarType.SINT32 || scalar === ScalarType.SFIXED32
        ? 2 ** 31 - 1
        : Number.MAX_SAFE_INTEGER;
      if (Math.abs(value) > max) throw invalidArgument(`${name} is out of range`);
      return scalarToProto(scalar, value, name);
    }
  }
}


/**
 * JSON.parse reads 1e400 as Infinity, which protobuf JSON (and PostgreSQL's jsonb) cannot hold;
 * and a value may not nest past MAX_JSON_DEPTH. Walked with an explicit stack, as the value may be
 * deeper than the call stack.
 */
function checkJsonValue(value: JsonValue, name: string): void {
  const fault = findInJson(value, (current, depth) => {
    if (typeof current === "number" && !Number.isFinite(current)) return "must be a finite number";
    if (depth > MAX_JSON_DEPTH) return `nests deeper than ${MAX_JSON_DEPTH} levels`;
    return undefined;
  });
  if (fault) throw invalidArgument(`${name}${fault.path} ${fault.problem}`);
}

const structFieldsCache = new Map<DescMessage, DescField[]>();

/** The fields of `schema` that hold google.protobuf.Struct, singular or repeated. */
function structFields(schema: DescMessage): DescField[] {
  let fields = structFieldsCache.get(schema);
  if (!fields) {
    fields = schema.fields.filter((f) => (f.fieldKind === "message" || (f.fieldKind === "list" && f.listKind === "message"))
      && f.message.typeName === "google.protobuf.Struct");
    structFieldsCache.set(schema, fields);
  }
  return fields;
}

/** Protobuf JSON → message; anything the walk above let through that protobuf rejects is a 400. */
export function decodeMessage<Desc extends DescMessage>(schema: Desc, json: JsonObject): MessageShape<Desc> {
  try {
    // protobuf-es holds google.protobuf.Struct fields as plain JSON objects, but fromJson builds
    // each one as a Struct of Values first: for data-stream's 1,000 rows, a third of the decoding.
    // The walk above has checked them (checkJsonValue), so top-level ones are set as they are.
    const structs: [DescField, JsonValue][] = [];
    for (const field of structFields(schema)) {
      const value = json[field.jsonName];
      if (value === undefined) continue;
      structs.push([field, value]);
      delete json[field.jsonName];
    }
    const message = fromJson(schema, json, { ignoreUnknownFields: true });
    for (const [field, value] of structs) (message as unknown as Record<string, JsonValue>)[field.localName] = value;
    return message;
  } catch (err) {
    const detail = err instanceof Error ? err.message.replace(/^cannot decode [^:]*: ?/, "") : String(err);
    throw invalidArgument(`Invalid request: ${detail}`);
  }
}

// ---- responses --------------------------------------------------------------------------

/** A message → the contract's REST JSON. */
export function messageToRest(schema: DescMessage, message: MessageShape<DescMessage>): JsonObject {
  const out: JsonObject = {};
  const record = message as unknown as Record<string, unknown>;
  for (const field of schema.fields) {
    const rules = fieldRules(field);
    if (rules?.writeOnly || rules?.nextPage) continue;
    const value = record[field.localName];
    if (field.fieldKind === "list") {
      const items = value as unknown[];
      out[field.jsonName] = items.length === 0 && rules?.nullIfEmpty
        ? null
        : items.map((item) => itemToRest(field, item));
      continue;
    }
    if (field.fieldKind === "map") {
      const entries = Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, scalarToRest(v)]);
      out[field.jsonName] = Object.fromEntries(entries) as JsonObject;
      continue;
    }
    const hasPresence = field.fieldKind === "message" || field.proto.proto3Optional;
    if (hasPresence && !isFieldSet(message, field)) {
      out[field.jsonName] = null;
      continue;
    }
    switch (field.fieldKind) {
      case "scalar":
        out[field.jsonName] = scalarToRest(value);
        break;
      case "enum":
        out[field.jsonName] = enumAliases(field.enum).toAlias.get(value as number) ?? null;
        break;
      case "message":
        out[field.jsonName] = nestedToRest(field.message, value);
        break;
    }
  }
  return out;
}

function itemToRest(field: DescField & { fieldKind: "list" }, item: unknown): JsonValue {
  switch (field.listKind) {
    case "scalar":
      return scalarToRest(item);
    case "enum":
      return enumAliases(field.enum).toAlias.get(item as number) ?? null;
    case "message":
      return nestedToRest(field.message, item);
  }
}

function nestedToRest(desc: DescMessage, value: unknown): JsonValue {
  // protobuf-es unwraps google.protobuf.Struct to a plain JSON object and wrappers to primitives.
  if (!isMessage(value)) return scalarToRest(value);
  // The contract's dates always carry milliseconds (2024-03-22T11:31:01.185Z); this is also the
  // hot path of every list, where the generic toJson of each timestamp costs most.
  if (isMessage(value, TimestampSchema)) return timestampDate(value).toISOString();
  return isWellKnown(desc) ? toJson(desc, value) : messageToRest(desc, value);
}

function scalarToRest(value: unknown): JsonValue {
  return typeof value === "bigint" ? Number(value) : (value as JsonValue);
}

function isObject(value: JsonValue): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
