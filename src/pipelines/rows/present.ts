import type { JsonObject } from "@bufbuild/protobuf";

/** A stored row as selected by `rowColumns`. */
export interface RowRecord {
  row_id: string;
  inference_id: string;
  ts_seconds: number;
  output: string | null;
  ground_truth: string | null;
  latency_ms: number | null;
  cost: number | null;
  num_tokens: number | null;
  session_id: string | null;
  user_id: string | null;
  data: JsonObject;
}

export const rowColumns = `row_id, inference_id, extract(epoch from ts)::float8 as ts_seconds, output, ground_truth,
  latency_ms, cost, num_tokens, session_id, user_id, data`;


/**
 * A row as the API shows it: `openlayer_row_id`, the columns as sent, then the canonical columns
 * (those the config mapped; the inference ID and timestamp always, made up if the row had none).
 */
export function presentRow(record: RowRecord): JsonObject {
  const row: JsonObject = { openlayer_row_id: Number(record.row_id), ...record.data };
  row.openlayer_inference_id = record.inference_id;
  row.openlayer_timestamp = record.ts_seconds;
  const optional: [string, string | number | null][] = [
    ["openlayer_output", record.output],
    ["openlayer_ground_truth", record.ground_truth],
    ["openlayer_latency", record.latency_ms],
    ["openlayer_cost", record.cost],
    ["openlayer_num_of_tokens", record.num_tokens],
    ["openlayer_session_id", record.session_id],
    ["openlayer_user_id", record.user_id],
  ];
  for (const [name, value] of optional) if (value !== null) row[name] = value;
  return row;
}
