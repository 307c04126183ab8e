import { randomUUID } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import { invalidArgument } from "../../platform/errors.ts";
import { findInJson } from "../../platform/json.ts";
import type { ColumnMapping } from "./config.ts";
import type { RowPatch, SerializedRow } from "./row-store.ts";

/**
 * Timestamps Warden takes: from 2000-01-01 to a week ahead of now. Each month holds a partition
 * (src/pipelines/rows/partitions.ts), so an open range would let one batch of made-up dates create
 * a thousand tables; and a value in milliseconds, a common slip, would land in the year 50,000.
 */
const MIN_TIMESTAMP = 946_684_800;
const FUTURE_SLACK_SECONDS = 7 * 86_400;

const MAX_ID_LENGTH = 1024;

function maxTimestamp(nowSeconds: number): number {
  return nowSeconds + FUTURE_SLACK_SECONDS;
}

/**
 * Checks each row against the mapping and takes out its canonical values: all the rows, or a 400
 * naming the first row and column at fault. Linear in the size of the rows.
 */
export function normalizeRows(
  rows: readonly JsonObject[],
  mapping: ColumnMapping,
  nowSeconds: number,
  where: (index: number) => string = (i) => `rows[${i}]`,
): SerializedRow[] {
  return rows.map((row, i) => normalizeRow(row, mapping, nowSeconds, where(i)));
}

/**
 * A row that updates the stored row with the same inference ID (a late ground truth, a merge):
 * its keys are merged into the stored ones, and the canonical columns that the mapping names and
 * the row has are replaced (by the row store, from the row).
 */
export function rowPatch(row: JsonObject, mapping: ColumnMapping, nowSeconds: number, where: string, inferenceId?: string): RowPatch {
  checkStorable(row, where);
  const id = idValue(row, mapping.inferenceId, where);
  if (inferenceId === undefined && id === undefined) throw invalidArgument(`${where} has no inference ID in "${mapping.inferenceId}"`);
  if (inferenceId !== undefined && id !== undefined && id !== inferenceId) {
    throw invalidArgument(`${where}.${mapping.inferenceId} must be the inferenceId of the query, or absent`);
  }
  const patch: RowPatch = { inferenceId: inferenceId ?? (id as string), data: row };
  if (mapping.timestamp !== undefined && mapping.timestamp in row) patch.timestamp = timestampValue(row, mapping.timestamp, where, nowSeconds);
  // Checked here, for a 400 that names the row; read by the row store.
  numberValue(row, mapping.latency, where);
  numberValue(row, mapping.cost, where);
  numberValue(row, mapping.numOfTokens, where);
  idValue(row, mapping.sessionId, where);
  idValue(row, mapping.userId, where);
  return patch;
}

function normalizeRow(row: JsonObject, mapping: ColumnMapping, nowSeconds: number, where: string): SerializedRow {
  checkStorable(row, where);
  for (const column of mapping.required) {
    if (!(column in row)) throw invalidArgument(`${where} has no column "${column}", which the config names`);
  }
  const inferenceId = idValue(row, mapping.inferenceId, where) ?? randomUUID();
  const timestamp = timestampValue(row, mapping.timestamp, where, nowSeconds) ?? nowSeconds;
  // Checked here, for a 400 that names the row; read by the row store.
  numberValue(row, mapping.latency, where);
  numberValue(row, mapping.cost, where);
  numberValue(row, mapping.numOfTokens, where);
  idValue(row, mapping.sessionId, where);
  idValue(row, mapping.userId, where);
  return { inferenceId, timestamp, json: JSON.stringify(row) };
}

/** A mapped numeric column: a finite number or null. */
function numberValue(row: JsonObject, column: string | undefined, where: string): number | null {
  if (column === undefined) return null;
  const value = row[column];
  if (value === null || value === undefined) return null;
  if (typeof value !== "number" || !Number.isFinite(value)) throw invalidArgument(`${where}.${column} must be a number`);
  return value;
}

/**
 * Seconds from 1e11 up are taken for milliseconds: as seconds they would be past the year 5000,
 * and as milliseconds they are any date since 1973. TypeScript's OpenAIMonitor sends Date.now().
 */
const MILLISECONDS_FROM = 1e11;

/** UNIX seconds within the range Warden stores, or undefined when the row has none. */
function timestampValue(row: JsonObject, column: string | undefined, where: string, nowSeconds: number): number | undefined {
  let value = numberValue(row, column, where);
  if (value === null) return undefined;
  if (value >= MILLISECONDS_FROM) value /= 1000;
  const max = maxTimestamp(nowSeconds);
  if (value < MIN_TIMESTAMP || value > max) {
    throw invalidArgument(`${where}.${column} must be UNIX seconds from ${MIN_TIMESTAMP} (2000-01-01) to a week from now (${Math.floor(max)})`);
  }
  return value;
}

/** An ID column: a string or a number, kept as a string; undefined when absent or null. */
function idValue(row: JsonObject, column: string | undefined, where: string): string | undefined {
  if (column === undefined) return undefined;
  const value = row[column];
  if (value === null || value === undefined) return undefined;
  const id = typeof value === "string" ? value : typeof value === "number" ? String(value) : undefined;
  if (id === undefined || id === "" || id.length > MAX_ID_LENGTH) {
    throw invalidArgument(`${where}.${column} must be a string or a number of 1 to ${MAX_ID_LENGTH} characters`);
  }
  return id;
}

/** PostgreSQL's jsonb cannot hold U+0000, in a key or in a string: such a row is refused with the path of the first one. */
function checkStorable(row: JsonObject, where: string): void {
  const fault = findInJson(row, (value, _depth, isKey) => {
    if (typeof value !== "string" || !value.includes("\u0000")) return undefined;
    return isKey ? "has a column name with a NUL character" : "contains a NUL character";
  });
  if (fault) throw invalidArgument(`${where}${fault.path} ${fault.problem}`);
}
