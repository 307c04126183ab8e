import { Counter, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { SeriesCounter, SeriesHistogram } from "../src/platform/series-metrics.ts";

/**
 * The hot path's counters and histograms against prom-client's own: the same observations must
 * give the same exposition (labels compared in sorted order: prom-client writes `le` first).
 */

function normalized(text: string): string[] {
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => {
      const match = /^([a-zA-Z_:][\w:]*)\{(.*)\} (\S+)$/.exec(line);
      if (!match) return line;
      const labels = [...match[2]!.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map(([, name, value]) => `${name}="${value}"`).sort();
      return `${match[1]}{${labels.join(",")}} ${match[3]}`;
    })
    .sort();
}

const buckets = [0.001, 0.01, 0.1, 1, 10];
const values = [0, 0.0005, 0.001, 0.0011, 0.01, 0.5, 1, 9.99, 10, 10.5, 1e6];

describe("series metrics", () => {
  it("expose what prom-client's Counter and Histogram expose for the same observations", async () => {
    const theirs = new Registry();
    const ours = new Registry();
    const theirCounter = new Counter({ name: "x_requests_total", help: "Requests.", labelNames: ["endpoint", "status"], registers: [theirs] });
    const ourCounter = new SeriesCounter({ name: "x_requests_total", help: "Requests.", labelNames: ["endpoint", "status"], registers: [ours] });
    const theirHistogram = new Histogram({ name: "x_duration_seconds", help: "Durations.", labelNames: ["endpoint"], buckets, registers: [theirs] });
    const ourHistogram = new SeriesHistogram({ name: "x_duration_seconds", help: "Durations.", labelNames: ["endpoint"], buckets, registers: [ours] });

    for (const [i, value] of values.entries()) {
      const endpoint = i % 3 === 0 ? "messages" : "responses";
      const status = i % 2 === 0 ? "200" : "429";
      theirCounter.inc({ endpoint, status });
      ourCounter.series(endpoint, status).inc();
      theirHistogram.observe({ endpoint }, value);
      ourHistogram.series(endpoint).observe(value);
    }
    theirCounter.inc({ endpoint: "quote\"and\\back", status: "200" }, 0.25);
    ourCounter.series("quote\"and\\back", "200").inc(0.25);

    expect(normalized(await ours.metrics())).toEqual(normalized(await theirs.metrics()));
    // Spot checks, worked out by hand: values ≤ 0.01 for "messages" (i = 0, 3, 6, 9: 0, 0.0011, 1, 10.5).
    const text = await ours.metrics();
    expect(text).toContain('x_duration_seconds_bucket{endpoint="messages",le="0.001"} 1');
    expect(text).toContain('x_duration_seconds_bucket{endpoint="messages",le="0.01"} 2');
    expect(text).toContain('x_duration_seconds_bucket{endpoint="messages",le="10"} 3');
    expect(text).toContain('x_duration_seconds_bucket{endpoint="messages",le="+Inf"} 4');
    expect(text).toContain('x_duration_seconds_count{endpoint="messages"} 4');
    expect(text).toContain("# TYPE x_duration_seconds histogram");
    expect(text).toContain("# TYPE x_requests_total counter");
  });

  it("keep a looked-up series: counting into it again adds to the same sample, and reset zeroes it in place", async () => {
    const registry = new Registry();
    const counter = new SeriesCounter({ name: "y_total", help: "Y.", labelNames: ["a"], registers: [registry] });
    const series = counter.series("one");
    series.inc();
    counter.series("one").inc(2);
    expect(await registry.metrics()).toContain('y_total{a="one"} 3');
    registry.resetMetrics();
    series.inc();
    expect(await registry.metrics()).toContain('y_total{a="one"} 1');
  });

  it("refuses a wrong number of label values, and leaves a value that is not a number out", async () => {
    const registry = new Registry();
    const histogram = new SeriesHistogram({ name: "z_seconds", help: "Z.", labelNames: ["a", "b"], buckets: [1], registers: [registry] });
    expect(() => histogram.series("only one")).toThrow("z_seconds: 2 label values expected, got 1");
    const series = histogram.series("x", "y");
    series.observe(Number.NaN);
    series.observe(Number.POSITIVE_INFINITY);
    series.observe(0.5);
    expect(await registry.metrics()).toContain('z_seconds_count{a="x",b="y"} 1');
    expect(await registry.metrics()).toContain('z_seconds_sum{a="x",b="y"} 0.5');
  });
});
