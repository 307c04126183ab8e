import { formatNumber } from "../format.ts";
import type { ExpectedValue, Test } from "../types.ts";

/** "p90Latency < 500": a test's thresholds as written. */
export function thresholdText(test: Test): string {
  return test.thresholds.map((t) => `${t.measurement || t.insightName} ${t.operator} ${formatValue(t.value)}`).join("; ");
}

function formatValue(value: unknown): string {
  return typeof value === "number" ? formatNumber(value) : JSON.stringify(value);
}

/** "280 (< 500)" per threshold, from a result's expected values. */
export function MeasuredText(props: { values: ExpectedValue[] }) {
  if (props.values.length === 0) return <span class="muted">—</span>;
  return (
    <>
      {props.values.map((v, i) => (
        <span key={i} class="measured">
          {v.measurement} = {formatNumber(v.measuredValue)}
          {boundsText(v)}
        </span>
      ))}
    </>
  );
}

function boundsText(v: ExpectedValue): string {
  if (v.lowerThreshold !== null && v.upperThreshold !== null && v.lowerThreshold === v.upperThreshold) return ` (is ${formatNumber(v.lowerThreshold)})`;
  const parts = [v.lowerThreshold !== null ? `≥ ${formatNumber(v.lowerThreshold)}` : "", v.upperThreshold !== null ? `≤ ${formatNumber(v.upperThreshold)}` : ""].filter(Boolean);
  return parts.length ? ` (bound ${parts.join(", ")})` : "";
}
