import { useId } from "preact/hooks";
import { formatCompact, formatNumber, formatWindow } from "../format.ts";
import type { TestResult } from "../types.ts";
import { linearScale } from "./scale.ts";
import { useWidth } from "./useWidth.ts";

const HEIGHT = 220;
/** Room each x-axis label needs, in pixels. */
const LABEL_ROOM = 96;
const PAD = { left: 56, right: 16, top: 16, bottom: 36 };

interface Point {
  result: TestResult;
  x: number;
  value: number | null;
  lower: number | null;
  upper: number | null;
}

/**
 * One measurement of a test, window by window: the measured value as a line, the threshold as a
 * dashed line, passing windows as round points and failing ones as red squares in a shaded band,
 * skipped and erroring windows as hollow marks on the axis. Clicking a window selects it; the
 * window table beside the chart does the same from the keyboard.
 */
export function WindowChart(props: { results: TestResult[]; measurement: string; selectedId: string | undefined; onSelect(result: TestResult): void }) {
  const titleId = useId();
  const descId = useId();
  const { ref, width: WIDTH } = useWidth<HTMLDivElement>(720);
  const windows = props.results
    .filter((r) => r.dateDataStarts)
    .sort((a, b) => Date.parse(a.dateDataStarts!) - Date.parse(b.dateDataStarts!));
  if (windows.length === 0) return <div ref={ref} />;
  const points = windows.map((result) => {
    const expected = result.expectedValues.find((v) => v.measurement === props.measurement);
    return { result, value: expected?.measuredValue ?? null, lower: expected?.lowerThreshold ?? null, upper: expected?.upperThreshold ?? null };
  });
  const numbers = points.flatMap((p) => [p.value, p.lower, p.upper]).filter((n): n is number => n !== null);
  const y = linearScale(Math.min(0, ...numbers), Math.max(0, ...numbers), HEIGHT - PAD.bottom, PAD.top);
  const first = Date.parse(windows[0]!.dateDataStarts!);
  const last = Date.parse(windows.at(-1)!.dateDataStarts!);
  const span = last - first;
  const plotWidth = WIDTH - PAD.left - PAD.right;
  // Time decides where a window is (gaps show as gaps); a single window sits in the middle.
  const xOf = (time: number) => (span === 0 ? PAD.left + plotWidth / 2 : PAD.left + 12 + ((time - first) / span) * (plotWidth - 24));
  const placed: Point[] = points.map((p) => ({ ...p, x: xOf(Date.parse(p.result.dateDataStarts!)) }));
  const band = Math.max(6, Math.min(40, placed.length > 1 ? (plotWidth / placed.length) * 0.8 : 40));
  const line = (pick: (p: Point) => number | null) => pathThrough(placed.map((p) => [p.x, pick(p)] as const), y);
  const failing = placed.filter((p) => p.result.status === "failing").length;
  const passing = placed.filter((p) => p.result.status === "passing").length;
  const baseline = HEIGHT - PAD.bottom;
  const labelEvery = Math.ceil(placed.length / Math.max(1, Math.floor(plotWidth / LABEL_ROOM)));

  return (
    <div ref={ref} class="chart-box">
      <svg class="chart" width={WIDTH} height={HEIGHT} viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-labelledby={`${titleId} ${descId}`} data-testid="window-chart">
        <title id={titleId}>{props.measurement} per window</title>
        <desc id={descId}>
          {placed.length} windows: {passing} passing, {failing} failing, {placed.length - passing - failing} not measured.
        </desc>
        {y.ticks.map((tick) => (
          <g key={tick} class="grid">
            <line x1={PAD.left} x2={WIDTH - PAD.right} y1={y(tick)} y2={y(tick)} />
            <text x={PAD.left - 8} y={y(tick)} dy="0.32em" text-anchor="end">
              {formatCompact(tick)}
            </text>
          </g>
        ))}
        {placed.map((p) =>
          p.result.status === "failing" ? <rect key={`band-${p.result.id}`} class="fail-band" x={p.x - band / 2} y={PAD.top} width={band} height={baseline - PAD.top} /> : null,
        )}
        {([["upper", (p: Point) => p.upper], ["lower", (p: Point) => p.lower]] as const).map(([name, pick]) => {
          const bound = sameEverywhere(placed.map(pick));
          // The usual case, one threshold for every window: a line across the whole plot, labelled.
          if (bound !== undefined) {
            return (
              <g key={name} class="threshold">
                <line x1={PAD.left} x2={WIDTH - PAD.right} y1={y(bound)} y2={y(bound)} />
                <text x={WIDTH - PAD.right - 4} y={y(bound) - 4} text-anchor="end">
                  {name === "upper" ? "≤" : "≥"} {formatNumber(bound)}
                </text>
              </g>
            );
          }
          return <path key={name} class="threshold" d={line(pick)} />;
        })}
        <path class="measured-line" d={line((p) => p.value)} />
        {placed.map((p, i) => {
          const selected = p.result.id === props.selectedId;
          const label = `${formatWindow(p.result.dateDataStarts, p.result.dateDataEnds)}: ${p.result.status}${p.value === null ? "" : `, ${props.measurement} = ${formatNumber(p.value)}`}`;
          return (
            <g key={p.result.id} class={`window window-${p.result.status}${selected ? " selected" : ""}`} data-status={p.result.status} onClick={() => props.onSelect(p.result)}>
              <title>{label}</title>
              <rect class="hit" x={p.x - band / 2} y={PAD.top} width={band} height={baseline - PAD.top} />
              {p.value === null ? (
                <circle class="mark-none" cx={p.x} cy={baseline} r={4} />
              ) : p.result.status === "failing" ? (
                <rect class="mark" x={p.x - 5} y={y(p.value) - 5} width={10} height={10} />
              ) : (
                <circle class="mark" cx={p.x} cy={y(p.value)} r={5} />
              )}
              {selected && p.value !== null ? <circle class="ring" cx={p.x} cy={y(p.value)} r={9} /> : null}
              {i % labelEvery === 0 ? (
                <text class="x-label" x={p.x} y={HEIGHT - 12} text-anchor="middle">
                  {new Date(p.result.dateDataStarts!).toLocaleString(undefined, { month: "short", day: "numeric", hour: "2-digit" })}
                </text>
              ) : null}
            </g>
          );
        })}
        <line class="axis" x1={PAD.left} x2={WIDTH - PAD.right} y1={baseline} y2={baseline} />
      </svg>
    </div>
  );
}

/** The one bound of every window that has one, when they all agree. */
function sameEverywhere(values: (number | null)[]): number | undefined {
  const present = new Set(values.filter((v): v is number => v !== null));
  return present.size === 1 ? [...present][0] : undefined;
}

/** An SVG path through the points that have a value; a missing value breaks the line. */
function pathThrough(points: (readonly [number, number | null])[], y: (value: number) => number): string {
  let d = "";
  let drawing = false;
  for (const [x, value] of points) {
    if (value === null) {
      drawing = false;
      continue;
    }
    d += `${drawing ? "L" : "M"}${x.toFixed(1)},${y(value).toFixed(1)}`;
    drawing = true;
  }
  return d;
}
