import { getOption, type DescEnum } from "@bufbuild/protobuf";
import { json_value } from "../../gen/warden/api/v1/annotations_pb.js";
import { invalidArgument } from "./errors.ts";

/**
 * Enums are stored by their protobuf value name ("LLM_BASE", "ADMIN"), so the database needs no
 * mapping table of its own; the REST strings live only in the proto.
 */
type ProtoEnum = Record<string, string | number>;

/**
 * The stored name of a value. Protobuf enums are open: a Connect or gRPC caller may send a number
 * the enum does not have, which is the caller's bad input.
 */
export function enumName<E extends ProtoEnum>(enumObject: E, value: number, field = "an enum field"): string {
  const name = enumObject[value];
  if (typeof name !== "string") throw invalidArgument(`${field} has an unknown value: ${value}`);
  return name;
}

/** A stored name back to its value; an unknown name (from an older schema) is UNSPECIFIED (0). */
export function enumValue<E extends ProtoEnum>(enumObject: E, name: string | null | undefined): E[keyof E] & number {
  const value = name == null ? undefined : enumObject[name];
  return (typeof value === "number" ? value : 0) as E[keyof E] & number;
}

/** A value the caller must set: UNSPECIFIED is a missing field. */
export function requireEnum<E extends ProtoEnum>(field: string, enumObject: E, value: number): string {
  if (value === 0) throw invalidArgument(`${field} is required`);
  return enumName(enumObject, value, field);
}

/** The string that stands for a value in REST JSON (its `json_value` option), such as "<=". */
export function enumJsonValue(desc: DescEnum, value: number): string | undefined {
  const found = desc.values.find((v) => v.number === value);
  return (found && getOption(found, json_value)) || undefined;
}
