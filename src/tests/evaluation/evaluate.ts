import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { Operator, OperatorSchema, TestResultStatus, type Threshold } from "../../../gen/warden/tests/v1/tests_pb.js";
import { enumJsonValue } from "../../platform/enums.ts";
import type { RowMeter } from "../../pipelines/rows/measure.ts";
import type { StoredExpectedValue, Test } from "../entities.ts";
import { loadThresholds } from "../thresholds.ts";
import { judgeMean, type JudgedRow, type JudgeSettings } from "./judge.ts";
import { planOf, type MeasurePlan } from "./measures.ts";
import { runSqlQuery, type SqlQueryLimits } from "./sql-query.ts";
import { failsCheck, textOf, type TextDetectors } from "./text-checks.ts";

/** What evaluation uses besides the rows: the detectors, DuckDB's bounds, the workspace's judge. */
export interface EvaluationTools {
  detectors(): Promise<TextDetectors>;
  sqlQueryLimits: SqlQueryLimits;
  /** The judge model a workspace set (gateway key and model), if any. */
  judgeOf(workspaceId: string): Promise<JudgeSettings | undefined>;
  /** Rows a judge scores per evaluation, at most: a sample, since each row is one model call. */
  judgeSampleSize: number;
}

/** Where a judge finds a row's input and context: the config's column names. */
export interface JudgeFields {
  inputColumns: readonly string[];
  contextColumn?: string;
}

export interface Outcome {
  status: TestResultStatus;
  statusMessage: string;
  expectedValues: StoredExpectedValue[];
}

function holds(value: number, operator: Operator, bound: number): boolean {
  switch (operator) {
    case Operator.IS:
      return value === bound;
    case Operator.GREATER:
      return value > bound;
    case Operator.GREATER_OR_EQUAL:
      return value >= bound;
    case Operator.LESS:
      return value < bound;
    case Operator.LESS_OR_EQUAL:
      return value <= bound;
    case Operator.NOT_EQUAL:
      return value !== bound;
    default:
      return false;
  }
}

/** The bounds a threshold puts on its measurement, and the value measured, as results show them. */
function expectedValue(threshold: Threshold, bound: number, measuredValue: number): StoredExpectedValue {
  const lower = threshold.operator === Operator.GREATER || threshold.operator === Operator.GREATER_OR_EQUAL || threshold.operator === Operator.IS;
  const upper = threshold.operator === Operator.LESS || threshold.operator === Operator.LESS_OR_EQUAL || threshold.operator === Operator.IS;
  return { measurement: threshold.measurement, lowerThreshold: lower ? bound : null, upperThreshold: upper ? bound : null, measuredValue };
}

/** A measured value as a message shows it: no float noise. */
function shown(value: number): string {
  return String(Number(value.toPrecision(12)));
}

const outcome = (status: TestResultStatus, statusMessage: string, expectedValues: StoredExpectedValue[] = []): Outcome =>
  ({ status, statusMessage, expectedValues });

type Measured = { value: number | null } | { skip: string } | { error: string };

function optionalText(value: JsonValue | undefined): string | undefined {
  return value === undefined || value === null ? undefined : textOf(value);
}

/** A judged row from a row as sent and its canonical output and ground truth. */
function judgedRow(row: { output: string | null; groundTruth: string | null; data: JsonObject }, fields: JudgeFields): JudgedRow {
  const inputs = fields.inputColumns.flatMap((c) => {
    const text = optionalText(row.data[c]);
    return text === undefined ? [] : [fields.inputColumns.length > 1 ? `${c}: ${text}` : text];
  });
  return {
    output: row.output ?? undefined,
    groundTruth: row.groundTruth ?? undefined,
    input: inputs.length > 0 ? inputs.join("\n") : undefined,
    context: fields.contextColumn === undefined ? undefined : optionalText(row.data[fields.contextColumn]),
  };
}

/** Measures one planned threshold over the rows. */
async function measured(plan: Exclude<MeasurePlan, { skip: string } | { error: string }>, meter: RowMeter, tools: EvaluationTools, test: Test, fields: JudgeFields): Promise<Measured> {
  if ("sql" in plan) return { value: await meter.measure(plan.sql) };
  if ("count" in plan) {
    const detectors = await tools.detectors();
    let failing = 0;
    for await (const values of meter.values(plan.column)) {
      for (const value of values) if (failsCheck(plan.count, value, detectors)) failing += 1;
    }
    return { value: failing };
  }
  if ("query" in plan) {
    const result = await runSqlQuery(plan.query, (columns) => meter.rows(columns), tools.sqlQueryLimits);
    return "error" in result ? result : { value: result.value };
  }
  const judge = await tools.judgeOf(test.workspaceId);
  if (!judge) return { skip: "No judge model is set for this workspace (PATCH /v1/gateway/workspace-settings: judgeModel and judgeKey)" };
  const rows = (await meter.sample(tools.judgeSampleSize)).map((row) => judgedRow(row, fields));
  const result = await judgeMean(judge, plan.judge, rows);
  return "error" in result ? result : { value: result.meanScore };
}

/**
 * One test over a set of rows (`scope`: a window of a pipeline, or a commit's dataset): every threshold
 * measured, then passing if all hold, failing if one does not. Skipped, saying why, when there is
 * no row, a column a threshold reads is in none of them, or the measurement is not computed by this
 * server; error when a threshold cannot be checked as given.
 */
export async function evaluateRows(meter: RowMeter, test: Test, tools: EvaluationTools, fields: JudgeFields, scope: string): Promise<Outcome> {
  if (await meter.isEmpty()) return outcome(TestResultStatus.SKIPPED, `The ${scope} holds no rows`);
  const thresholds = loadThresholds(test.thresholds);
  if (thresholds.length === 0) return outcome(TestResultStatus.SKIPPED, "The test has no thresholds");
  const findings: string[] = [];
  const expected: StoredExpectedValue[] = [];
  let failing = false;
  for (const threshold of thresholds) {
    const plan = planOf(test.subtype, threshold);
    if ("skip" in plan) return outcome(TestResultStatus.SKIPPED, plan.skip);
    if ("error" in plan) return outcome(TestResultStatus.ERROR, plan.error);
    for (const column of plan.columns) {
      if (!(await meter.hasColumn(column))) return outcome(TestResultStatus.SKIPPED, `No row of the ${scope} has the column ${column}`);
    }
    const kind = threshold.value?.kind;
    if (kind?.case !== "numberValue") return outcome(TestResultStatus.ERROR, `The threshold on ${threshold.measurement} must have a number as its value`);
    const result = await measured(plan, meter, tools, test, fields);
    if ("skip" in result) return outcome(TestResultStatus.SKIPPED, result.skip);
    if ("error" in result) return outcome(TestResultStatus.ERROR, `${threshold.measurement}: ${result.error}`);
    if (result.value === null) return outcome(TestResultStatus.SKIPPED, `No value of ${threshold.measurement}`);
    const ok = holds(result.value, threshold.operator, kind.value);
    failing ||= !ok;
    findings.push(`${threshold.measurement} = ${shown(result.value)} (threshold ${enumJsonValue(OperatorSchema, threshold.operator)} ${shown(kind.value)}: ${ok ? "holds" : "does not hold"})`);
    expected.push(expectedValue(threshold, kind.value, result.value));
  }
  return outcome(failing ? TestResultStatus.FAILING : TestResultStatus.PASSING, findings.join("; "), expected);
}
