/** Linear scales and round tick values for the console's SVG charts. */

export interface Scale {
  (value: number): number;
  ticks: number[];
}

/** Maps [min, max] onto [from, to], widened to round numbers, with about `count` ticks. */
export function linearScale(min: number, max: number, from: number, to: number, count = 4): Scale {
  if (min === max) {
    // A flat series still gets an axis around its value.
    const pad = min === 0 ? 1 : Math.abs(min) * 0.5;
    min -= pad;
    max += pad;
  }
  const step = niceStep((max - min) / count);
  const low = Math.floor(min / step) * step;
  const high = Math.ceil(max / step) * step;
  const ticks: number[] = [];
  for (let tick = low; tick <= high + step / 2; tick += step) ticks.push(Number(tick.toPrecision(12)));
  const scale = ((value: number) => from + ((value - low) / (high - low)) * (to - from)) as Scale;
  scale.ticks = ticks;
  return scale;
}

/** 1, 2 or 5 times a power of ten, at least `rough`. */
function niceStep(rough: number): number {
  const power = 10 ** Math.floor(Math.log10(rough));
  const fraction = rough / power;
  return (fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10) * power;
}
