import type { Metric, Registry } from "prom-client";

/**
 * Counters and histograms for the gateway's hot path, served by prom-client's registry with the
 * rest. Why not prom-client's own: each of its `inc` and `observe` calls builds the series' hash
 * from the label values, checks every label name, and finds the bucket by turning each bound into a
 * property name; recording one gateway request (seven observations) cost 3.6 µs. Here a caller
 * looks a series up once (GatewayMetrics keeps them per kind of request) and then counts into it
 * directly. The exposition is prom-client's: the registry formats what `get` returns.
 */

type Labels = Record<string, string>;

/**
 * What prom-client's registry reads from a metric to format it (its lib/registry.js). Its type
 * declarations do not describe it: they give `type` as a numeric enum, where the registry prints
 * the string.
 */
interface Exposition {
  name: string;
  help: string;
  type: "counter" | "histogram";
  aggregator: "sum";
  values: { labels: Record<string, string | number>; value: number; metricName: string }[];
}

export interface SeriesOptions {
  name: string;
  help: string;
  labelNames: readonly string[];
  registers: Registry[];
}

abstract class SeriesMetric<S extends { labels: Labels }> {
  readonly name: string;
  readonly help: string;
  abstract readonly type: "counter" | "histogram";
  readonly aggregator = "sum" as const;
  readonly #labelNames: readonly string[];
  protected readonly all = new Map<string, S>();

  constructor(options: SeriesOptions) {
    this.name = options.name;
    this.help = options.help;
    this.#labelNames = options.labelNames;
    // prom-client's types list its own classes; its registry needs only name, help, type and get().
    for (const registry of options.registers) registry.registerMetric(this as unknown as Metric);
  }

  /** The series of these label values, in the order of `labelNames`; made on first use. */
  series(...values: string[]): S {
    if (values.length !== this.#labelNames.length) throw new Error(`${this.name}: ${this.#labelNames.length} label values expected, got ${values.length}`);
    const key = values.join("\u0000");
    let series = this.all.get(key);
    if (series === undefined) {
      const labels: Labels = {};
      this.#labelNames.forEach((name, i) => (labels[name] = values[i]!));
      series = this.create(labels);
      this.all.set(key, series);
    }
    return series;
  }

  protected abstract create(labels: Labels): S;

  /** Zero every series in place: holders of a series keep counting into the same one. */
  abstract reset(): void;

  abstract get(): Promise<Exposition>;
}

export class CounterSeries {
  readonly labels: Labels;
  value = 0;

  constructor(labels: Labels) {
    this.labels = labels;
  }

  inc(by = 1): void {
    this.value += by;
  }
}

export class SeriesCounter extends SeriesMetric<CounterSeries> {
  readonly type = "counter";

  protected create(labels: Labels): CounterSeries {
    return new CounterSeries(labels);
  }

  reset(): void {
    for (const series of this.all.values()) series.value = 0;
  }

  async get(): Promise<Exposition> {
    const values = [...this.all.values()].map((s) => ({ labels: s.labels, value: s.value, metricName: this.name }));
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}

export class HistogramSeries {
  /** Observations per bucket (not cumulative); the last counts those above every bound. */
  readonly counts: Float64Array;
  readonly labels: Labels;
  readonly #bounds: readonly number[];
  sum = 0;
  count = 0;

  constructor(labels: Labels, bounds: readonly number[]) {
    this.labels = labels;
    this.#bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1);
  }

  /** A value that is not a finite number is left out (prom-client throws; a request must not fail for it). */
  observe(value: number): void {
    if (!Number.isFinite(value)) return;
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]! += 1;
    this.sum += value;
    this.count += 1;
  }
}

export class SeriesHistogram extends SeriesMetric<HistogramSeries> {
  readonly type = "histogram";
  readonly #bounds: readonly number[];

  constructor(options: SeriesOptions & { buckets: readonly number[] }) {
    super(options);
    this.#bounds = [...options.buckets].sort((a, b) => a - b);
  }

  protected create(labels: Labels): HistogramSeries {
    return new HistogramSeries(labels, this.#bounds);
  }

  reset(): void {
    for (const series of this.all.values()) {
      series.counts.fill(0);
      series.sum = 0;
      series.count = 0;
    }
  }

  async get(): Promise<Exposition> {
    const values: Exposition["values"] = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.all.values()) {
      let cumulative = 0;
      this.#bounds.forEach((bound, i) => {
        cumulative += s.counts[i]!;
        values.push({ labels: { ...s.labels, le: bound }, value: cumulative, metricName: bucket });
      });
      values.push({ labels: { ...s.labels, le: "+Inf" }, value: s.count, metricName: bucket });
      values.push({ labels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}
