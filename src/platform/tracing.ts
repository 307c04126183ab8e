import { createHash, randomBytes } from "node:crypto";
import { context, trace, SamplingDecision, SpanKind, SpanStatusCode, TraceFlags, type Attributes, type Context, type HrTime, type Link, type Span, type SpanContext, type Tracer } from "@opentelemetry/api";
import { ExportResultCode, millisToHrTime, parseTraceParent, setGlobalErrorHandler, TraceState } from "@opentelemetry/core";
import { OTLPExporterBase } from "@opentelemetry/otlp-exporter-base";
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from "@opentelemetry/otlp-exporter-base/node-http";
import { ProtobufTraceSerializer, TraceExporterMetricsHelper, type ISerializer, type IExportTraceServiceResponse } from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type IdGenerator,
  type ReadableSpan,
  type Sampler,
  type SpanExporter,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace";
import { Counter, Gauge, type Registry } from "prom-client";
import type { Logger } from "./logger.ts";
import { encodeTraceExport } from "./otlp-encoding.ts";

/**
 * Traces, through OpenTelemetry's SDK, exported over OTLP/HTTP (protobuf) when an endpoint is set;
 * with none, there is no `Tracing` at all and requests make no spans. Contexts are passed by hand
 * (no global context manager): the two places that make spans know their parent, and
 * AsyncLocalStorage would cost every request something.
 *
 * The gateway spec makes `X-Request-ID` the trace ID: a 32-hex-digit ID is the trace ID as is, any
 * other is mapped to one (the first 16 bytes of its SHA-256). With no X-Request-ID, the trace ID
 * (the caller's `traceparent`'s, or a new one) is the request ID, so that log lines and spans
 * always meet.
 */

export type SamplerName = "always_on" | "always_off" | "traceidratio" | "parentbased_always_on" | "parentbased_always_off" | "parentbased_traceidratio";

export interface TracingSettings {
  /** Where spans are posted (`…/v1/traces`). */
  url: string;
  headers: Record<string, string>;
  timeoutMs: number;
  serviceName: string;
  resourceAttributes: Record<string, string>;
  sampler: SamplerName;
  samplerRatio: number;
  scheduleDelayMs: number;
  maxQueueSize: number;
  maxExportBatchSize: number;
}

/** The W3C headers a caller sent, as read from its request. */
export interface IncomingTraceHeaders {
  requestId: string | undefined;
  traceparent: string | undefined;
  tracestate: string | undefined;
}

const HEX32 = /^[0-9a-f]{32}$/i;
const ZERO_TRACE = "0".repeat(32);

/** The trace ID of a request ID: itself when it is 32 hex digits (not all zeros), else a hash of it. */
function traceIdOf(requestId: string): string {
  if (HEX32.test(requestId) && requestId !== ZERO_TRACE) return requestId.toLowerCase();
  return createHash("sha256").update(requestId).digest("hex").slice(0, 32);
}

/**
 * Random IDs from a pool filled 4 KiB at a time: one `randomBytes` call per ID cost 2 µs, three
 * per request (the trace and two spans), measured; a slice of the pool costs a tenth of that.
 */
class RandomPool {
  #pool = Buffer.alloc(0);
  #at = 0;

  hex(bytes: number): string {
    if (this.#at + bytes > this.#pool.length) {
      this.#pool = randomBytes(4096);
      this.#at = 0;
    }
    const id = this.#pool.toString("hex", this.#at, this.#at + bytes);
    this.#at += bytes;
    return id;
  }
}

/**
 * Chooses the trace ID of the next root span: the SDK asks its IdGenerator, and `startSpan` is
 * synchronous, so the ID set just before it is the one it takes.
 */
class ChosenTraceIds implements IdGenerator {
  next: string | undefined;
  readonly random = new RandomPool();

  generateTraceId(): string {
    const chosen = this.next;
    this.next = undefined;
    return chosen ?? this.random.hex(16);
  }

  generateSpanId(): string {
    return this.random.hex(8);
  }
}

/**
 * Mirrors the batch processor's queue, for the metrics: the SDK keeps its count private. Placed
 * before it, it sees each span as the batch processor will (sampled spans only; dropped once the
 * queue is full), and the exporter below it tells when spans leave the queue.
 */
class QueueMeter implements SpanProcessor {
  queued = 0;
  readonly #maxQueueSize: number;
  readonly #dropped: Counter;

  constructor(maxQueueSize: number, dropped: Counter) {
    this.#maxQueueSize = maxQueueSize;
    this.#dropped = dropped;
  }

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
    if (this.queued >= this.#maxQueueSize) this.#dropped.inc();
    else this.queued += 1;
  }

  async forceFlush(): Promise<void> {}
  async shutdown(): Promise<void> {}
}

/** The OTLP exporter, counting what leaves the queue and what the collector refused. */
function meteredExporter(inner: SpanExporter, meter: QueueMeter, exported: Counter, failed: Counter): SpanExporter {
  return {
    export(spans, done) {
      meter.queued = Math.max(0, meter.queued - spans.length);
      inner.export(spans, (result) => {
        if (result.code === ExportResultCode.SUCCESS) exported.inc(spans.length);
        else failed.inc(spans.length);
        done(result);
      });
    },
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  };
}

/** Spans encoded by Warden (otlp-encoding.ts says why), the collector's answer read by the SDK. */
const traceSerializer: ISerializer<ReadableSpan[], IExportTraceServiceResponse> = {
  serializeRequest: encodeTraceExport,
  deserializeResponse: (data) => ProtobufTraceSerializer.deserializeResponse(data),
};

/**
 * The SDK's OTLP/HTTP protobuf span exporter (what `OTLPTraceExporter` of
 * @opentelemetry/exporter-trace-otlp-proto builds: its transport, retries, timeout, headers and
 * `OTEL_EXPORTER_OTLP_*` variables), with Warden's encoder in place of the SDK's serializer.
 */
function otlpExporter(settings: TracingSettings): SpanExporter {
  // The batch processor's flush (at shutdown) sends every queued batch at once; the exporter
  // refuses exports past its limit (30 by default), and those spans would be lost. As many as the
  // queue can hold, and the one already out.
  const concurrencyLimit = Math.max(30, Math.ceil(settings.maxQueueSize / settings.maxExportBatchSize) + 1);
  const options = convertLegacyHttpOptions({ url: settings.url, headers: settings.headers, timeoutMillis: settings.timeoutMs, concurrencyLimit }, "TRACES", "v1/traces", {
    "Content-Type": "application/x-protobuf",
  });
  return new OTLPExporterBase(createOtlpHttpExportDelegate(options, traceSerializer, "otlp_http_span_exporter", TraceExporterMetricsHelper, undefined));
}

function sampler(settings: TracingSettings): Sampler {
  const ratio = () => new TraceIdRatioBasedSampler(settings.samplerRatio);
  switch (settings.sampler) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return ratio();
    case "parentbased_always_on":
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: ratio() });
  }
}

export class Tracing {
  readonly #provider: TracerProvider;
  readonly #tracer: Tracer;
  readonly #sampler: Sampler;
  readonly #ids = new ChosenTraceIds();
  /** Epoch milliseconds at performance.now() = 0, read once (see #at). */
  readonly #anchor = Date.now() - performance.now();

  constructor(settings: TracingSettings, registry: Registry, logger: Logger) {
    const registers = [registry];
    this.#sampler = sampler(settings);
    const dropped = new Counter({ name: "warden_trace_spans_dropped_total", help: "Spans dropped because the export queue was full.", registers });
    const exported = new Counter({ name: "warden_trace_spans_exported_total", help: "Spans the OTLP collector accepted.", registers });
    const failed = new Counter({ name: "warden_trace_spans_export_failed_total", help: "Spans whose export failed (the collector refused them, or did not answer in time).", registers });
    const meter = new QueueMeter(settings.maxQueueSize, dropped);
    new Gauge({
      name: "warden_trace_queue_spans",
      help: "Ended spans waiting to be exported.",
      registers,
      collect() {
        this.set(meter.queued);
      },
    });
    const exporter = otlpExporter(settings);
    // The SDK reports export failures here; one line each, never the headers (they may hold a token).
    setGlobalErrorHandler((err) => logger.warn({ component: "tracing", err: err instanceof Error ? err.message : String(err) }, "span export failed"));
    this.#provider = new TracerProvider({
      resource: resourceFromAttributes({ ...settings.resourceAttributes, "service.name": settings.serviceName }),
      sampler: this.#sampler,
      idGenerator: this.#ids,
      spanProcessors: [
        meter,
        new BatchSpanProcessor({
          exporter: meteredExporter(exporter, meter, exported, failed),
          scheduledDelayMillis: settings.scheduleDelayMs,
          maxQueueSize: settings.maxQueueSize,
          maxExportBatchSize: settings.maxExportBatchSize,
          exportTimeoutMillis: settings.timeoutMs,
        }),
      ],
    });
    this.#tracer = this.#provider.getTracer("warden");
  }

  /**
   * The SERVER span of one request, and its request ID: the caller's X-Request-ID, or else the
   * trace's ID. `headers` are the caller's X-Request-ID, traceparent and tracestate.
   */
  startRequest(name: string, headers: IncomingTraceHeaders, attributes: Attributes): { span: Span; requestId: string } {
    const remote = headers.traceparent ? parseTraceParent(headers.traceparent) : null;
    if (remote && headers.tracestate) remote.traceState = new TraceState(headers.tracestate);
    const own = headers.requestId;
    let parent: Context = context.active();
    let links: Link[] | undefined;
    let requestId: string;
    let traceId: string;
    let parentContext: SpanContext | undefined;
    if (own === undefined) {
      // No request ID: the caller's trace, or a new one, and its ID names the request.
      traceId = remote?.traceId ?? this.#ids.random.hex(16);
      requestId = traceId;
      if (remote) parentContext = remote;
    } else {
      requestId = own;
      traceId = traceIdOf(own);
      if (remote && remote.traceId === traceId) parentContext = remote;
      // X-Request-ID decides the trace; a caller's span in another trace is linked, not lost.
      else if (remote) links = [{ context: remote }];
    }
    if (parentContext) parent = trace.setSpanContext(parent, parentContext);
    // The sampler is asked first: a request it leaves out gets its span context and nothing of the
    // SDK's, whose span start still counts the span for its own metrics and wraps it (a fifth of
    // tracing's cost at one request in ten: 3.8 → 3.0 µs). The SDK asks the same sampler again for
    // the others.
    if (this.#sampler.shouldSample(parent, traceId, name, SpanKind.SERVER, {}, links ?? []).decision === SamplingDecision.NOT_RECORD) {
      const span = trace.wrapSpanContext({ traceId, spanId: this.#ids.random.hex(8), traceFlags: TraceFlags.NONE, traceState: parentContext?.traceState });
      return { span, requestId };
    }
    if (!parentContext) this.#ids.next = traceId;
    const span = this.#tracer.startSpan(name, { kind: SpanKind.SERVER, links, startTime: this.#at(performance.now()) }, parent);
    this.#ids.next = undefined;
    // Attributes go only on a span that records them: the SDK validates each one it is given (a
    // WeakSet each), before its sampler has decided, and twice when given at the start.
    if (span.isRecording()) {
      span.setAttributes(attributes);
      span.setAttribute("warden.request_id", requestId);
    }
    return { span, requestId };
  }

  /**
   * A child of `parent`: from `startTime` (a performance.now() time; default now). End it with
   * `end` or `fail`. A parent that is not recorded (not sampled) has no children: what it is given
   * is its parent's context again, so that a call sent on still carries the trace (and the
   * decision not to sample it), at none of a span's cost.
   */
  startChild(parent: Span, name: string, options: { kind?: SpanKind; startTime?: number; attributes?: Attributes } = {}): Span {
    if (!parent.isRecording()) return trace.wrapSpanContext(parent.spanContext());
    const span = this.#tracer.startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, startTime: this.#at(options.startTime ?? performance.now()) }, trace.setSpan(context.active(), parent));
    if (options.attributes) span.setAttributes(options.attributes);
    return span;
  }

  /** A finished step of `parent`, from `start` to `end` (performance.now() times); nothing for a parent not recorded. */
  step(parent: Span, name: string, start: number, end: number): void {
    if (parent.isRecording()) this.startChild(parent, name, { startTime: start }).end(this.#at(end));
  }

  /** Ends `span` now, on the spans' one clock. */
  end(span: Span): void {
    span.end(this.#at(performance.now()));
  }

  /** Marks `span` failed with the error type the conventions ask for, and ends it. */
  fail(span: Span, errorType: string, message?: string): void {
    spanFailed(span, errorType, message);
    this.end(span);
  }

  /**
   * A performance.now() time as the time of a span. Every span of the process is given its times
   * from this one clock: left to the SDK, each span anchors itself to Date.now() (whole
   * milliseconds) when it starts, and a step could then seem to begin before its request did.
   */
  #at(monotonicMs: number): HrTime {
    return millisToHrTime(this.#anchor + monotonicMs);
  }

  /** The traceparent (and tracestate) that makes `span` the parent of a call sent on. */
  headersFor(span: Span): Record<string, string> {
    // W3C Trace Context, version 00, as the SDK's propagator writes it; written here, it needs
    // no context made for the span (a Map copied per call).
    const { traceId, spanId, traceFlags, traceState } = span.spanContext();
    const headers: Record<string, string> = { traceparent: `00-${traceId}-${spanId}-${traceFlags.toString(16).padStart(2, "0")}` };
    const state = traceState?.serialize();
    if (state) headers.tracestate = state;
    return headers;
  }

  /** Sends what is queued, within the export timeout, and stops. */
  async shutdown(): Promise<void> {
    await this.#provider.shutdown();
  }

  async forceFlush(): Promise<void> {
    await this.#provider.forceFlush();
  }
}


/** Marks a span failed, with the error type the conventions ask for. */
export function spanFailed(span: Span, errorType: string, message?: string): void {
  span.setAttribute("error.type", errorType);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

export type { Span };
export { SpanKind };
