import type { JsonValue } from "@bufbuild/protobuf";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { Threshold } from "../../../gen/warden/tests/v1/tests_pb.js";
import type { RowMeasure, Statistic } from "../../pipelines/rows/measure.ts";
import { criteriaOf, llmMetrics, type JudgeCriterion } from "./judge.ts";
import { piiTypesOf, type TextCheck } from "./text-checks.ts";

/**
 * What a threshold of a subtype measures, or why it cannot be measured here:
 * - `sql`: a measure computed in PostgreSQL, where the rows are;
 * - `count`: the rows whose value of `column` fails a check run in the process (text-checks.ts);
 * - `query`: a user's `sqlQuery`, run in DuckDB over the rows (sql-query.ts);
 * - `judge`: the mean score a judge model gives the rows (judge.ts).
 * `columns` are those the rows must have for the measure to mean anything.
 */
export type MeasurePlan =
  | { sql: RowMeasure; columns: string[] }
  | { count: TextCheck; column: string; columns: string[] }
  | { query: string; columns: string[] }
  | { judge: JudgeCriterion; columns: string[] }
  | { skip: string }
  | { error: string };

const statistics: readonly Statistic[] = ["mean", "min", "max", "median", "p90", "p95", "p99", "sum"];

/** metricThreshold's measurements on the canonical columns (docs/tests.md). */
const metrics: Record<string, { column: string; statistic: Statistic }> = {
  meanLatency: { column: "openlayer_latency", statistic: "mean" },
  medianLatency: { column: "openlayer_latency", statistic: "median" },
  p90Latency: { column: "openlayer_latency", statistic: "p90" },
  p95Latency: { column: "openlayer_latency", statistic: "p95" },
  p99Latency: { column: "openlayer_latency", statistic: "p99" },
  maxLatency: { column: "openlayer_latency", statistic: "max" },
  meanCost: { column: "openlayer_cost", statistic: "mean" },
  totalCost: { column: "openlayer_cost", statistic: "sum" },
  meanTokens: { column: "openlayer_num_of_tokens", statistic: "mean" },
  totalTokens: { column: "openlayer_num_of_tokens", statistic: "sum" },
};

/** llmRubricThresholdV2's measurements: the mean score of the rows on criterion N of criteria_list. */
const criterionMeasurement = /^criteria(\d{1,3})MeanScore$/u;

/** A threshold's insightParameters by name, as plain JSON. */
function parametersOf(threshold: Threshold): Map<string, JsonValue> {
  return new Map(threshold.insightParameters.map((p) => [p.name, p.value ? toJson(ValueSchema, p.value) : null]));
}

function columnsOf(value: JsonValue | undefined): string[] | undefined {
  if (typeof value === "string" && value !== "") return [value];
  if (Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === "string" && v !== "")) return value as string[];
  return undefined;
}

function statisticOf(value: JsonValue | undefined, fallback: Statistic): Statistic | undefined {
  if (value === undefined || value === null) return fallback;
  return statistics.find((s) => s === value);
}

/** A count of failing rows over one text column, `openlayer_output` unless `column_name` says. */
function countPlan(check: TextCheck, column: string[] | undefined): MeasurePlan {
  if (column && column.length > 1) return { error: "column_name must be one column" };
  const text = column?.[0] ?? "openlayer_output";
  return { count: check, column: text, columns: [text] };
}

/**
 * The plan of one threshold of a test. Subtypes and measurements this server does not compute
 * are skipped, saying so (the contract's "… is not evaluated by this server").
 */
export function planOf(subtype: string, threshold: Threshold): MeasurePlan {
  const params = parametersOf(threshold);
  const column = columnsOf(params.get("column_name"));
  const statistic = statisticOf(params.get("statistic"), "mean");
  if (statistic === undefined) return { error: `The parameter statistic must be one of: ${statistics.join(", ")}` };
  switch (subtype) {
    case "rowCount":
      return { sql: { kind: "rowCount" }, columns: [] };
    case "nullRowCount":
      if (column && column.length > 1) return { error: "nullRowCount takes one column_name" };
      return { sql: { kind: "nullRowCount", column: column?.[0] }, columns: column ?? [] };
    case "duplicateRowCount":
      return { sql: { kind: "duplicateRowCount", columns: column }, columns: column ?? [] };
    case "characterLength":
    case "sentenceLength": {
      const text = column?.[0] ?? "openlayer_output";
      const kind = subtype === "characterLength" ? "characterLength" : "wordCount";
      return { sql: { kind, column: text, statistic }, columns: [text] };
    }
    case "columnAverage":
    case "columnStatistic": {
      if (!column || column.length > 1) return { error: `${subtype} needs the parameter column_name: one column` };
      const used = subtype === "columnAverage" ? "mean" : statistic;
      return { sql: { kind: "numeric", column: column[0]!, statistic: used }, columns: column };
    }
    case "isJson":
      return countPlan({ kind: "isJson" }, column);
    case "containsValidUrl":
      return countPlan({ kind: "containsValidUrl" }, column);
    case "containsPii": {
      const entityTypes = piiTypesOf(params.get("pii_type"));
      if ("error" in entityTypes) return entityTypes;
      return countPlan({ kind: "pii", entityTypes }, column);
    }
    case "sqlQuery": {
      const query = params.get("query");
      if (typeof query !== "string" || query.trim() === "") return { error: "sqlQuery needs the parameter query: a SELECT … FROM df" };
      return { query, columns: [] };
    }
    case "llmRubricThresholdV2": {
      const criteria = criteriaOf(params.get("criteria_list"));
      if ("error" in criteria) return criteria;
      const index = Number(criterionMeasurement.exec(threshold.measurement)?.[1]);
      if (!Number.isInteger(index)) return { error: `llmRubricThresholdV2 measures criteriaNMeanScore (criteria0MeanScore, …), not ${threshold.measurement}` };
      const text = criteria[index];
      if (text === undefined) return { error: `${threshold.measurement} names criterion ${index}, but criteria_list has ${criteria.length}` };
      return { judge: { kind: "rubric", text }, columns: ["openlayer_output"] };
    }
    case "metricThreshold": {
      if (threshold.measurement === "promptInjectionRowCount") return countPlan({ kind: "promptInjection" }, column);
      if (Object.hasOwn(llmMetrics, threshold.measurement)) return { judge: { kind: "metric", name: threshold.measurement }, columns: ["openlayer_output"] };
      const metric = metrics[threshold.measurement];
      if (!metric) return { skip: `metricThreshold on ${threshold.measurement} is not evaluated by this server` };
      return { sql: { kind: "numeric", column: metric.column, statistic: metric.statistic }, columns: [metric.column] };
    }
    default:
      return { skip: `${subtype} is not evaluated by this server` };
  }
}
