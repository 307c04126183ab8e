import { Operator, OperatorSchema, TestResultStatus, type Threshold } from "../../../gen/warden/tests/v1/tests_pb.js";
import { enumJsonValue } from "../../platform/enums.ts";
import type { Window, WindowMeasure } from "../../pipelines/rows/window.ts";
import type { StoredExpectedValue, Test } from "../entities.ts";
import { loadThresholds } from "../thresholds.ts";
import { planOf } from "./measures.ts";

/** What monitoring evaluation reads of a pipeline's rows (the row store). */
export interface WindowMeter {
  measure(window: Window, measure: WindowMeasure): Promise<number | null>;
  hasColumn(window: Window, column: string): Promise<boolean>;
}

export interface WindowOutcome {
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

/** The bounds a threshold puts on its measurement, as results show them. */
function expectedValue(threshold: Threshold, bound: number): StoredExpectedValue {
  const lower = threshold.operator === Operator.GREATER || threshold.operator === Operator.GREATER_OR_EQUAL || threshold.operator === Operator.IS;
  const upper = threshold.operator === Operator.LESS || threshold.operator === Operator.LESS_OR_EQUAL || threshold.operator === Operator.IS;
  return { measurement: threshold.measurement, lowerThreshold: lower ? bound : null, upperThreshold: upper ? bound : null };
}

/** A measured value as a message shows it: no float noise. */
function shown(value: number): string {
  return String(Number(value.toPrecision(12)));
}

const outcome = (status: TestResultStatus, statusMessage: string, expectedValues: StoredExpectedValue[] = []): WindowOutcome =>
  ({ status, statusMessage, expectedValues });

/**
 * One monitoring test on one window of one pipeline: every threshold measured (in the database,
 * never by loading the rows), then passing if all hold, failing if one does not. Skipped, saying
 * why, when the window holds no rows, a column a threshold reads is in none of them, or the
 * measurement is not computed by this server; error when a threshold cannot be checked as given.
 */
export async function evaluateWindow(meter: WindowMeter, test: Test, window: Window): Promise<WindowOutcome> {
  const rows = await meter.measure(window, { kind: "rowCount" });
  if (!rows) return outcome(TestResultStatus.SKIPPED, "The window holds no rows");
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
      if (!(await meter.hasColumn(window, column))) return outcome(TestResultStatus.SKIPPED, `No row of the window has the column ${column}`);
    }
    const kind = threshold.value?.kind;
    if (kind?.case !== "numberValue") return outcome(TestResultStatus.ERROR, `The threshold on ${threshold.measurement} must have a number as its value`);
    const value = await meter.measure(window, plan.measure);
    if (value === null) return outcome(TestResultStatus.SKIPPED, `No value of ${threshold.measurement} in the window`);
    const ok = holds(value, threshold.operator, kind.value);
    failing ||= !ok;
    findings.push(`${threshold.measurement} = ${shown(value)} (threshold ${enumJsonValue(OperatorSchema, threshold.operator)} ${shown(kind.value)}: ${ok ? "holds" : "does not hold"})`);
    expected.push(expectedValue(threshold, kind.value));
  }
  return outcome(failing ? TestResultStatus.FAILING : TestResultStatus.PASSING, findings.join("; "), expected);
}
