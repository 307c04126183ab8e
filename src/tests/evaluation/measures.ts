import type { JsonValue } from "@bufbuild/protobuf";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { Threshold } from "../../../gen/warden/tests/v1/tests_pb.js";
import type { Statistic, WindowMeasure } from "../../pipelines/rows/window.ts";

/** What a threshold of a subtype measures over a window, or why it cannot be measured here. */
export type MeasurePlan = { measure: WindowMeasure; columns: string[] } | { skip: string } | { error: string };

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

/**
 * The plan of one threshold of a monitoring test. Subtypes and measurements this server does not
 * compute yet are skipped, saying so (the contract's "… is not evaluated by this server").
 */
export function planOf(subtype: string, threshold: Threshold): MeasurePlan {
  const params = parametersOf(threshold);
  const column = columnsOf(params.get("column_name"));
  const statistic = statisticOf(params.get("statistic"), "mean");
  if (statistic === undefined) return { error: `The parameter statistic must be one of: ${statistics.join(", ")}` };
  switch (subtype) {
    case "rowCount":
      return { measure: { kind: "rowCount" }, columns: [] };
    case "nullRowCount":
      if (column && column.length > 1) return { error: "nullRowCount takes one column_name" };
      return { measure: { kind: "nullRowCount", column: column?.[0] }, columns: column ?? [] };
    case "duplicateRowCount":
      return { measure: { kind: "duplicateRowCount", columns: column }, columns: column ?? [] };
    case "characterLength": {
      const text = column?.[0] ?? "openlayer_output";
      return { measure: { kind: "characterLength", column: text, statistic }, columns: [text] };
    }
    case "columnAverage":
    case "columnStatistic": {
      if (!column || column.length > 1) return { error: `${subtype} needs the parameter column_name: one column` };
      const used = subtype === "columnAverage" ? "mean" : statistic;
      return { measure: { kind: "numeric", column: column[0]!, statistic: used }, columns: column };
    }
    case "metricThreshold": {
      const metric = metrics[threshold.measurement];
      if (!metric) return { skip: `metricThreshold on ${threshold.measurement} is not evaluated by this server` };
      return { measure: { kind: "numeric", column: metric.column, statistic: metric.statistic }, columns: [metric.column] };
    }
    default:
      return { skip: `${subtype} is not evaluated by this server` };
  }
}
