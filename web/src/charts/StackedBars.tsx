import { useId } from "preact/hooks";
import { linearScale } from "./scale.ts";
import { useWidth } from "./useWidth.ts";

const HEIGHT = 240;
/** Room each x-axis label needs, in pixels. */
const LABEL_ROOM = 64;
const PAD = { left: 72, right: 12, top: 12, bottom: 32 };

/** Eight colours that stay apart for the common kinds of colour blindness (Okabe and Ito's). */
export const SERIES_COLOURS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#777777"];

export interface Series {
  name: string;
  /** One value per bucket, in the order of `buckets`. */
  values: number[];
}

/**
 * Values per time bucket, stacked by series (a key, a model…). Colours match the legend, which
 * names every series; the table below the chart on the usage page holds the same figures in words.
 */
export function StackedBars(props: { title: string; buckets: Date[]; series: Series[]; format(value: number): string; bucketLabel(date: Date): string }) {
  const titleId = useId();
  const { ref, width: WIDTH } = useWidth<HTMLElement>(720);
  const { buckets, series } = props;
  const totals = buckets.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0));
  const y = linearScale(0, Math.max(0, ...totals), HEIGHT - PAD.bottom, PAD.top);
  const plotWidth = WIDTH - PAD.left - PAD.right;
  const slot = plotWidth / Math.max(1, buckets.length);
  const barWidth = Math.max(1, slot * 0.75);
  const labelEvery = Math.ceil(buckets.length / Math.max(1, Math.floor(plotWidth / LABEL_ROOM)));
  return (
    <figure class="chart-figure" ref={ref}>
      <svg class="chart" width={WIDTH} height={HEIGHT} viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-labelledby={titleId} data-testid="usage-chart">
        <title id={titleId}>{props.title}</title>
        {y.ticks.map((tick) => (
          <g key={tick} class="grid">
            <line x1={PAD.left} x2={WIDTH - PAD.right} y1={y(tick)} y2={y(tick)} />
            <text x={PAD.left - 8} y={y(tick)} dy="0.32em" text-anchor="end">
              {props.format(tick)}
            </text>
          </g>
        ))}
        {buckets.map((bucket, i) => {
          let base = 0;
          const x = PAD.left + i * slot + (slot - barWidth) / 2;
          return (
            <g key={bucket.getTime()}>
              {series.map((s, k) => {
                const value = s.values[i] ?? 0;
                if (value <= 0) return null;
                const top = y(base + value);
                const bottom = y(base);
                base += value;
                return (
                  <rect key={s.name} x={x} y={top} width={barWidth} height={Math.max(0.5, bottom - top)} fill={SERIES_COLOURS[k % SERIES_COLOURS.length]}>
                    <title>{`${props.bucketLabel(bucket)} · ${s.name}: ${props.format(value)}`}</title>
                  </rect>
                );
              })}
              {i % labelEvery === 0 ? (
                <text class="x-label" x={x + barWidth / 2} y={HEIGHT - 10} text-anchor="middle">
                  {props.bucketLabel(bucket)}
                </text>
              ) : null}
            </g>
          );
        })}
        <line class="axis" x1={PAD.left} x2={WIDTH - PAD.right} y1={HEIGHT - PAD.bottom} y2={HEIGHT - PAD.bottom} />
      </svg>
      <figcaption>
        <span class="visually-hidden">{props.title}. </span>
        <ul class="legend">
          {series.map((s, k) => (
            <li key={s.name}>
              <span class="swatch" aria-hidden="true" data-colour={k % SERIES_COLOURS.length} />
              {s.name}
            </li>
          ))}
        </ul>
      </figcaption>
    </figure>
  );
}
