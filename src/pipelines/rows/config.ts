import { fromJson, isFieldSet, toJson, type JsonObject } from "@bufbuild/protobuf";
import { DataConfigSchema, type DataConfig } from "../../../gen/warden/pipelines/v1/data_pb.js";
import { invalidArgument } from "../../platform/errors.ts";

/** A project's task type, as the REST contract spells it. */
export type TaskTypeName = "llm-base" | "tabular-classification" | "tabular-regression" | "text-classification";

const common = ["inferenceIdColumnName", "timestampColumnName", "latencyColumnName", "metadata"];

/** The config keys each task type takes (the SDKs' LlmData, TabularClassificationData, …). */
const keysByTaskType: Record<TaskTypeName, ReadonlySet<string>> = {
  "llm-base": new Set([
    ...common, "outputColumnName", "inputVariableNames", "contextColumnName", "questionColumnName", "costColumnName",
    "numOfTokenColumnName", "sessionIdColumnName", "userIdColumnName", "prompt", "groundTruthColumnName",
  ]),
  "tabular-classification": new Set([
    ...common, "classNames", "featureNames", "categoricalFeatureNames", "predictionsColumnName",
    "predictionScoresColumnName", "labelColumnName",
  ]),
  "tabular-regression": new Set([...common, "featureNames", "categoricalFeatureNames", "predictionsColumnName", "targetColumnName"]),
  "text-classification": new Set([
    ...common, "classNames", "predictionsColumnName", "predictionScoresColumnName", "labelColumnName", "textColumnName",
  ]),
};

const requiredByTaskType: Record<TaskTypeName, readonly string[]> = {
  "llm-base": ["outputColumnName"],
  "tabular-classification": ["classNames"],
  "tabular-regression": [],
  "text-classification": ["classNames"],
};

/** What `PUT …/rows` maps, whatever the task type. */
const rowUpdateKeys: ReadonlySet<string> = new Set([
  "groundTruthColumnName", "humanFeedbackColumnName", "latencyColumnName", "timestampColumnName", "inferenceIdColumnName",
]);

/** Where the canonical values of a row come from: column names of the rows. */
export interface ColumnMapping {
  inferenceId?: string;
  timestamp?: string;
  output?: string;
  groundTruth?: string;
  latency?: string;
  cost?: string;
  numOfTokens?: string;
  sessionId?: string;
  userId?: string;
  humanFeedback?: string;
  /** Columns every row must have (their value may be null). */
  required: string[];
}

/** The config keys that are set, with their values, in JSON names. */
function setKeys(config: DataConfig): Map<string, unknown> {
  const keys = new Map<string, unknown>();
  const record = config as unknown as Record<string, unknown>;
  for (const field of DataConfigSchema.fields) {
    const value = record[field.localName];
    if (field.fieldKind === "list" ? (value as unknown[]).length > 0 : isFieldSet(config, field)) keys.set(field.jsonName, value);
  }
  return keys;
}

function checkKeys(keys: Map<string, unknown>, allowed: ReadonlySet<string>, what: string): void {
  for (const key of keys.keys()) {
    if (!allowed.has(key)) throw invalidArgument(`config.${key} is not a field of ${what}`);
  }
}

function columnName(keys: Map<string, unknown>, key: string): string | undefined {
  const value = keys.get(key);
  if (value === undefined) return undefined;
  const name = value as string;
  if (name === "" || name.length > 1024) throw invalidArgument(`config.${key} must be a column name of 1 to 1024 characters`);
  return name;
}

/**
 * The mapping of a data-stream or data-load config, for a project of `taskType`. A key of another
 * task type's config, or a missing required key, is a 400 that names it.
 */
export function streamMapping(config: DataConfig, taskType: TaskTypeName, options: { merge?: boolean } = {}): ColumnMapping {
  const keys = setKeys(config);
  checkKeys(keys, keysByTaskType[taskType], `${taskType} configs`);
  // A merge adds columns to rows that have the rest: it needs their IDs, not an output.
  const required = options.merge ? ["inferenceIdColumnName"] : requiredByTaskType[taskType];
  for (const key of required) {
    if (!keys.has(key)) throw invalidArgument(`config.${key} is required ${options.merge ? "to merge rows" : `for ${taskType} pipelines`}`);
  }
  const mapping: ColumnMapping = {
    inferenceId: columnName(keys, "inferenceIdColumnName"),
    timestamp: columnName(keys, "timestampColumnName"),
    output: columnName(keys, "outputColumnName"),
    groundTruth: columnName(keys, "groundTruthColumnName") ?? columnName(keys, "labelColumnName") ?? columnName(keys, "targetColumnName"),
    latency: columnName(keys, "latencyColumnName"),
    cost: columnName(keys, "costColumnName"),
    numOfTokens: columnName(keys, "numOfTokenColumnName"),
    sessionId: columnName(keys, "sessionIdColumnName"),
    userId: columnName(keys, "userIdColumnName"),
    required: [],
  };
  // Only the output column (in a merge, the inference ID column) must be in every row. The other columns a config names may be left out
  // of a row, and read as null: the SDKs' own helpers do so (OpenAIMonitor names a cost column and
  // leaves cost out when it has no price for the model; its streamed calls send no tokens), and a
  // 400 there would be an unhandled rejection that ends the user's process.
  const idColumn = options.merge ? mapping.inferenceId : mapping.output;
  if (idColumn !== undefined) mapping.required = [idColumn];
  return mapping;
}

/** The mapping of a row update's config: only the columns a late update may carry. */
export function updateMapping(config: DataConfig | undefined): ColumnMapping {
  const keys = config ? setKeys(config) : new Map<string, unknown>();
  checkKeys(keys, rowUpdateKeys, "row update configs");
  return {
    inferenceId: columnName(keys, "inferenceIdColumnName"),
    timestamp: columnName(keys, "timestampColumnName"),
    groundTruth: columnName(keys, "groundTruthColumnName"),
    latency: columnName(keys, "latencyColumnName"),
    humanFeedback: columnName(keys, "humanFeedbackColumnName"),
    required: [],
  };
}

/** A config from plain JSON (the gateway's rows, a stored config); a malformed one is a 400. */
export function dataConfigFromJson(json: JsonObject): DataConfig {
  try {
    return fromJson(DataConfigSchema, json, { ignoreUnknownFields: false });
  } catch (err) {
    throw invalidArgument(`Invalid config: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** The config as it is kept on the pipeline: as given, in the contract's JSON names. */
export function dataConfigToJson(config: DataConfig): JsonObject {
  return toJson(DataConfigSchema, config) as JsonObject;
}
