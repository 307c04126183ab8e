import { TraceFlags } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import { SpanBatch } from "./otlp-encoding.ts";
import type { SpanExportAnswer } from "./span-export-thread.ts";

export interface SpanQueueSettings {
  scheduleDelayMs: number;
  maxQueueSize: number;
  maxExportBatchSize: number;
}

/** Where a queue's batches go, and what it tells of them (the metrics and the log). */
export interface SpanQueueOutlet {
  /** Sends an encoded batch of `spans` spans; never rejects. */
  send(body: Uint8Array, spans: number): Promise<SpanExportAnswer>;
  dropped(): void;
  exported(spans: number): void;
  failed(spans: number, error: string): void;
}

/**
 * The SDK's batch span processor (`BatchSpanProcessor`), its settings (`OTEL_BSP_*`) and its
 * behaviour: a batch leaves when it is full, or once the delay has passed since the first span
 * waiting; one export at a time; spans past the queue's bound are dropped and counted; a flush
 * sends every batch at once. Unlike the SDK's, it encodes each span as it ends and holds bytes
 * (otlp-encoding.ts, `SpanBatch`), not span objects: spans that waited up to the delay in the
 * queue lived through several young-generation collections and were promoted, for the old
 * generation's collector to find (docs/performance.md, "Span exports off the gateway's thread").
 */
export class SpanQueue {
  readonly #settings: SpanQueueSettings;
  readonly #outlet: SpanQueueOutlet;
  readonly #batches: SpanBatch[] = [];
  #queued = 0;
  #exporting = false;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  /** Exports sent and not yet answered. */
  readonly #out = new Set<Promise<void>>();

  constructor(settings: SpanQueueSettings, outlet: SpanQueueOutlet) {
    // As the SDK's: a batch larger than the queue could never fill, and is cut to the queue's size.
    this.#settings = { ...settings, maxExportBatchSize: Math.min(settings.maxExportBatchSize, settings.maxQueueSize) };
    this.#outlet = outlet;
  }

  /** Spans ended and not yet sent. */
  get queued(): number {
    return this.#queued;
  }

  /** Takes an ended span: a sampled one, while there is room and the queue is not shut down. */
  add(span: ReadableSpan): void {
    if (this.#stopped || (span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
    if (this.#queued >= this.#settings.maxQueueSize) {
      this.#outlet.dropped();
      return;
    }
    let batch = this.#batches.at(-1);
    if (batch === undefined || batch.count >= this.#settings.maxExportBatchSize) this.#batches.push((batch = new SpanBatch()));
    batch.add(span);
    this.#queued += 1;
    this.#schedule();
  }

  /** Sends every batch now, all at once, and waits for every export out to be answered. */
  async forceFlush(): Promise<void> {
    this.#clearTimer();
    while (this.#batches.length > 0) this.#sendOldest();
    await Promise.all([...this.#out]);
  }

  /** Sends what is queued, and takes no span after. */
  async shutdown(): Promise<void> {
    this.#stopped = true;
    await this.forceFlush();
  }

  #schedule(): void {
    if (this.#exporting || this.#queued === 0) return;
    if (this.#queued >= this.#settings.maxExportBatchSize) return this.#exportNext();
    if (this.#timer !== undefined) return;
    this.#timer = setTimeout(() => this.#exportNext(), this.#settings.scheduleDelayMs);
    this.#timer.unref();
  }

  #exportNext(): void {
    this.#clearTimer();
    this.#exporting = true;
    void this.#sendOldest().finally(() => {
      this.#exporting = false;
      this.#schedule();
    });
  }

  #sendOldest(): Promise<void> {
    const batch = this.#batches.shift();
    if (batch === undefined) return Promise.resolve();
    const spans = batch.count;
    this.#queued -= spans;
    const sent = this.#outlet.send(batch.encode(), spans).then((answer) => {
      this.#out.delete(sent);
      if (answer.ok) this.#outlet.exported(spans);
      else this.#outlet.failed(spans, answer.error);
    });
    this.#out.add(sent);
    return sent;
  }

  #clearTimer(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
