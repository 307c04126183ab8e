import { create, fromJson, toJson, type JsonObject } from "@bufbuild/protobuf";
import { ValueSchema, type Value } from "@bufbuild/protobuf/wkt";
import { Operator, ThresholdMode, ThresholdSchema, type Threshold } from "../../gen/warden/tests/v1/tests_pb.js";
import { defaultCondition, defaultMeasurement } from "./catalog.ts";
import { invalidArgument } from "../platform/errors.ts";
import { requireText } from "../platform/validate.ts";
import type { StoredThreshold } from "./entities.ts";

/**
 * A created test's thresholds with what they leave out filled in (docs/tests.md): the insight is
 * the subtype, the measurement the subtype's own, the condition "none of it" (rowCount: "more than
 * none"), and the mode manual. The SDKs' own example creates a test with `thresholds: [{}]`.
 */
export function withDefaults(subtype: string, thresholds: Threshold[]): Threshold[] {
  return thresholds.map((threshold) => {
    const measurement = threshold.measurement || defaultMeasurement(subtype);
    const condition = defaultCondition(measurement);
    return create(ThresholdSchema, {
      ...threshold,
      insightName: threshold.insightName || subtype,
      measurement,
      operator: threshold.operator === Operator.UNSPECIFIED ? operatorOf(condition.operator) : threshold.operator,
      value: threshold.value ?? create(ValueSchema, { kind: { case: "numberValue", value: condition.value } }),
      thresholdMode: threshold.thresholdMode ?? ThresholdMode.MANUAL,
    });
  });
}

function operatorOf(operator: ">" | "<="): Operator {
  return operator === ">" ? Operator.GREATER : Operator.LESS_OR_EQUAL;
}

/** Checks what the proto cannot say: required parts, and the allowed shapes of `value`. */
export function validateThresholds(field: string, thresholds: Threshold[]): void {
  thresholds.forEach((threshold, i) => {
    const name = `${field}[${i}]`;
    requireText(`${name}.insightName`, threshold.insightName, 255);
    requireText(`${name}.measurement`, threshold.measurement, 255);
    if (threshold.operator === Operator.UNSPECIFIED) throw invalidArgument(`${name}.operator is required`);
    const kind = threshold.value?.kind;
    const ok = (kind?.case === "numberValue" && Number.isFinite(kind.value)) || kind?.case === "boolValue" || kind?.case === "stringValue" ||
      (kind?.case === "listValue" && kind.value.values.every((v) => v.kind.case === "stringValue"));
    if (!ok) throw invalidArgument(`${name}.value must be a number, a boolean, a string or a list of strings`);
    threshold.insightParameters.forEach((parameter, j) => {
      if (!isFiniteJson(parameter.value)) throw invalidArgument(`${name}.insightParameters[${j}].value must be finite`);
    });
  });
}

/** A google.protobuf.Value with no NaN or Infinity anywhere in it (jsonb cannot hold them). */
function isFiniteJson(value: Value | undefined): boolean {
  const kind = value?.kind;
  if (kind?.case === "numberValue") return Number.isFinite(kind.value);
  if (kind?.case === "listValue") return kind.value.values.every(isFiniteJson);
  if (kind?.case === "structValue") return Object.values(kind.value.fields).every(isFiniteJson);
  return true;
}

/** Thresholds are stored as their protobuf JSON, so the proto stays their only schema. */
export function storeThresholds(thresholds: Threshold[]): StoredThreshold[] {
  return thresholds.map((t) => toJson(ThresholdSchema, t) as JsonObject);
}

/** Stored thresholds, as answers show them: one without a mode (stored before modes defaulted) is manual. */
export function loadThresholds(stored: StoredThreshold[]): Threshold[] {
  return stored.map((t) => {
    const threshold = fromJson(ThresholdSchema, t, { ignoreUnknownFields: true });
    threshold.thresholdMode ??= ThresholdMode.MANUAL;
    return threshold;
  });
}
