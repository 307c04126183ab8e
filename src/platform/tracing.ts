import { performance } from "node:perf_hooks";
import { Buffer } from "node:buffer";
import { createHash, randomBytes } from "node:crypto";
import { SpanKind, SpanStatusCode, TraceFlags, type Attributes, type HrTime, type Link, type SpanContext } from "@opentelemetry/api";
import { millisToHrTime, parseTraceParent, TraceState } from "@opentelemetry/core";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { Counter, Gauge, type Registry } from "prom-client";
import type { Logger } from "./logger.ts";
import { SpanExportThread } from "./span-export-thread.ts";
import { SpanQueue } from "./span-queue.ts";
import { foldOfBytes, foldOfHex, samplingDecider, type SamplerName, type SamplingDecider } from "./sampling.ts";
import { RecordedSpan, UnrecordedSpan, type Span, type SpanOrigin, type TraceHeaders } from "./spans.ts";

/**
 * Traces, exported over OTLP/HTTP as protobuf by OpenTelemetry's SDK exporter, from a thread of
 * its own (span-export-thread.ts), when an endpoint is set; the SDK's batch processor's queue and
 * its samplers' decisions are kept by Warden (span-queue.ts and sampling.ts say why). With no
 * endpoint there is no `Tracing` at all, and requests make no spans. The spans themselves are
 * Warden's (spans.ts says why). Contexts are passed by hand (no global context manager): the two
 * places that make spans know their parent, and AsyncLocalStorage would cost every request
 * something.
 *
 * The gateway spec makes `X-Request-ID` the trace ID: a 32-hex-digit ID is the trace ID as is, any
 * other is mapped to one (the first 16 bytes of its SHA-256). With no X-Request-ID, the trace ID
 * (the caller's `traceparent`'s, or a new one) is the request ID, so that log lines and spans
 * always meet.
 */

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

export type { TraceHeaders } from "./spans.ts";

/** The W3C headers a caller sent, as read from its request. */
export interface IncomingTraceHeaders {
  requestId: string | undefined;
  traceparent: string | undefined;
  tracestate: string | undefined;
}

const HEX32 = /^[0-9a-f]{32}$/i;
const ZERO_TRACE = "0".repeat(32);

/** A trace ID, and its fold for the ratio samplers (sampling.ts). */
interface TraceId {
  id: string;
  fold: number;
}

/** The trace ID of a request ID: itself when it is 32 hex digits (not all zeros), else a hash of it. */
function traceIdOf(requestId: string): TraceId {
  if (HEX32.test(requestId) && requestId !== ZERO_TRACE) {
    const id = requestId.toLowerCase();
    return { id, fold: foldOfHex(id) };
  }
  const digest = createHash("sha256").update(requestId).digest();
  return { id: digest.toString("hex", 0, 16), fold: foldOfBytes(digest, 0) };
}

/**
 * Random IDs from a pool filled 4 KiB at a time: one `randomBytes` call per ID cost 2 µs, three
 * per request (the trace and two spans), measured; a slice of the pool costs a tenth of that.
 */
class RandomPool {
  #pool = Buffer.alloc(0);
  #at = 0;
  /** A traceparent's characters, written in place: `00-`, 32 hex digits, `-`, 16, `-`, the flags. */
  readonly #traceparent = Buffer.from(`00-${"0".repeat(32)}-${"0".repeat(16)}-00`, "latin1");
  readonly #traceparentView = new DataView(this.#traceparent.buffer, this.#traceparent.byteOffset, this.#traceparent.length);

  hex(bytes: number): string {
    this.#take(bytes);
    return this.#pool.toString("hex", this.#at - bytes, this.#at);
  }

  /**
   * A new trace, as the traceparent of a call sent on (`00-<trace ID>-<span ID>-<flags>`): the IDs
   * from one slice of the pool, sampled or not as `decide` says of the trace ID. One flat string,
   * of which the IDs are slices: made of pieces (the IDs' hex joined with the dashes), it was
   * copied once more when the provider call's headers were checked.
   */
  newTrace(decide: SamplingDecider): string {
    this.#take(24);
    const pool = this.#pool;
    const at = this.#at - 24;
    const text = this.#traceparentView;
    // A byte's two digits in one store (the IDs start at odd offsets: a DataView's stores may).
    for (let i = 0; i < 16; i++) text.setUint16(3 + 2 * i, HEX_PAIRS[pool[at + i]!]!, true);
    for (let i = 0; i < 8; i++) text.setUint16(36 + 2 * i, HEX_PAIRS[pool[at + 16 + i]!]!, true);
    text.setUint8(54, decide(foldOfBytes(pool, at), undefined) ? DIGIT_ONE : DIGIT_ZERO);
    return this.#traceparent.toString("latin1");
  }

  #take(bytes: number): void {
    if (this.#at + bytes > this.#pool.length) {
      this.#pool = randomBytes(4096);
      this.#at = 0;
    }
    this.#at += bytes;
  }
}

const DIGIT_ZERO = 0x30;
const DIGIT_ONE = 0x31;
/**
 * Each byte's two hex digits, as one little-endian 16-bit value (the first digit in the low
 * byte). Measured in a loop, a traceparent written this way took 67 ns, digit by digit 82 ns, and
 * as the IDs' hex joined with the dashes (then flattened) 123 ns.
 */
const HEX_PAIRS = Uint16Array.from({ length: 256 }, (_, byte) => {
  const digit = (nibble: number) => "0123456789abcdef".charCodeAt(nibble);
  return digit(byte >> 4) | (digit(byte & 15) << 8);
});

/** W3C Trace Context, version 00, as the SDK's propagator writes it; Warden's spans carry one of two flags, sampled or not. */
function traceHeadersOf(context: SpanContext): TraceHeaders {
  const { traceId, spanId, traceFlags, traceState } = context;
  const headers: TraceHeaders = { traceparent: `00-${traceId}-${spanId}-${traceFlags === TraceFlags.SAMPLED ? "01" : "00"}` };
  const state = traceState?.serialize();
  if (state) headers.tracestate = state;
  return headers;
}

export class Tracing {
  readonly #queue: SpanQueue;
  readonly #thread: SpanExportThread;
  readonly #sampled: SamplingDecider;
  readonly #origin: SpanOrigin;
  readonly #random = new RandomPool();
  /** Epoch milliseconds at performance.now() = 0, read once (see #at). */
  readonly #anchor = Date.now() - performance.now();

  constructor(settings: TracingSettings, registry: Registry, logger: Logger) {
    const registers = [registry];
    this.#sampled = samplingDecider(settings.sampler, settings.samplerRatio);
    const dropped = new Counter({ name: "warden_trace_spans_dropped_total", help: "Spans dropped because the export queue was full.", registers });
    const exported = new Counter({ name: "warden_trace_spans_exported_total", help: "Spans the OTLP collector accepted.", registers });
    const failed = new Counter({ name: "warden_trace_spans_export_failed_total", help: "Spans whose export failed (the collector refused them, or did not answer in time).", registers });
    // A flush sends every queued batch at once; the SDK's exporter refuses exports past its limit
    // (30 by default), and those spans would be lost. As many as the queue can hold, and the one already out.
    const concurrencyLimit = Math.max(30, Math.ceil(settings.maxQueueSize / settings.maxExportBatchSize) + 1);
    this.#thread = new SpanExportThread({ url: settings.url, headers: settings.headers, timeoutMs: settings.timeoutMs, concurrencyLimit });
    const thread = this.#thread;
    const queue = new SpanQueue(settings, {
      send: (body, spans) => thread.send(body, spans),
      dropped: () => dropped.inc(),
      exported: (spans) => exported.inc(spans),
      // One line each, never the headers (they may hold a token).
      failed(spans, error) {
        failed.inc(spans);
        logger.warn({ component: "tracing", err: error }, "span export failed");
      },
    });
    this.#queue = queue;
    new Gauge({
      name: "warden_trace_queue_spans",
      help: "Ended spans waiting to be exported.",
      registers,
      collect() {
        this.set(queue.queued);
      },
    });
    this.#origin = {
      // As the SDK's TracerProvider has them for `getTracer("warden")` and this resource.
      resource: resourceFromAttributes({ ...settings.resourceAttributes, "service.name": settings.serviceName }),
      scope: { name: "warden" },
      ended: (span) => queue.add(span),
    };
  }

  /**
   * The SERVER span of one request, and its request ID: the caller's X-Request-ID, or else the
   * trace's ID. `headers` are the caller's X-Request-ID, traceparent and tracestate.
   */
  startRequest(name: string, headers: IncomingTraceHeaders, attributes: Attributes): { span: Span; requestId: string } {
    const remote = headers.traceparent ? parseTraceParent(headers.traceparent) : null;
    // As the SDK's propagator marks what it extracts: the span's parent (or link) is remote.
    if (remote) remote.isRemote = true;
    if (remote && headers.tracestate) remote.traceState = new TraceState(headers.tracestate);
    const own = headers.requestId;
    let links: Link[] | undefined;
    let requestId: string;
    let traceId: TraceId;
    let parentContext: SpanContext | undefined;
    if (own === undefined && !remote) {
      // A new trace, whose ID names the request.
      const traceparent = this.#random.newTrace(this.#sampled);
      const context = { traceId: traceparent.slice(3, 35), spanId: traceparent.slice(36, 52), traceFlags: traceparent.endsWith("1") ? TraceFlags.SAMPLED : TraceFlags.NONE };
      return { span: this.#span(name, context.traceId, context, undefined, attributes, undefined, { traceparent }), requestId: context.traceId };
    }
    if (own === undefined) {
      // No request ID: the caller's trace, and its ID names the request.
      traceId = { id: remote!.traceId, fold: foldOfHex(remote!.traceId) };
      requestId = traceId.id;
      parentContext = remote!;
    } else {
      requestId = own;
      traceId = traceIdOf(own);
      if (remote && remote.traceId === traceId.id) parentContext = remote;
      // X-Request-ID decides the trace; a caller's span in another trace is linked, not lost.
      else if (remote) links = [{ context: remote }];
    }
    const sampled = this.#sampled(traceId.fold, parentContext);
    const spanContext = {
      traceId: traceId.id,
      spanId: this.#random.hex(8),
      traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
      traceState: parentContext?.traceState,
    };
    return { span: this.#span(name, requestId, spanContext, parentContext, attributes, links), requestId };
  }

  /**
   * The request's span: recorded when the sampler kept it; else its context and the headers that
   * carry it on, and nothing more (no attributes built, no children). `headers`: made already.
   */
  #span(name: string, requestId: string, context: SpanContext, parent: SpanContext | undefined, attributes: Attributes, links: Link[] | undefined, headers?: TraceHeaders): Span {
    if (context.traceFlags !== TraceFlags.SAMPLED) return new UnrecordedSpan(context, headers ?? traceHeadersOf(context));
    const recorded = { ...attributes, "warden.request_id": requestId };
    return new RecordedSpan(this.#origin, name, SpanKind.SERVER, context, parent, this.#at(performance.now()), recorded, links);
  }

  /**
   * A child of `parent`: from `startTime` (a performance.now() time; default now). End it with
   * `end` or `fail`. A parent that is not recorded (not sampled) has no children: what it is given
   * is its parent's context again, so that a call sent on still carries the trace (and the
   * decision not to sample it), at none of a span's cost.
   *
   * The sampler is not asked again: for each of the samplers `OTEL_TRACES_SAMPLER` names, a
   * recorded parent's child is sampled as its parent is (the parent-based ones follow the parent;
   * `traceidratio` decides by the trace ID, which the child shares; `always_on` keeps everything).
   */
  startChild(parent: Span, name: string, options: { kind?: SpanKind; startTime?: number; attributes?: Attributes } = {}): Span {
    if (!parent.isRecording()) return parent;
    const parentContext = parent.spanContext();
    const { traceId, traceFlags, traceState } = parentContext;
    const spanContext = { traceId, spanId: this.#random.hex(8), traceFlags, traceState };
    const startTime = this.#at(options.startTime ?? performance.now());
    return new RecordedSpan(this.#origin, name, options.kind ?? SpanKind.INTERNAL, spanContext, parentContext, startTime, { ...options.attributes });
  }

  /** A finished step of `parent`, from `start` to `end` (performance.now() times); nothing for a parent not recorded. */
  step(parent: Span, name: string, start: number, end: number): void {
    if (parent.isRecording()) this.#endAt(this.startChild(parent, name, { startTime: start }), end);
  }

  /** Ends `span` now, on the spans' one clock. */
  end(span: Span): void {
    this.#endAt(span, performance.now());
  }

  /** Marks `span` failed with the error type the conventions ask for, and ends it. */
  fail(span: Span, errorType: string, message?: string): void {
    spanFailed(span, errorType, message);
    this.end(span);
  }

  #endAt(span: Span, monotonicMs: number): void {
    if (span instanceof RecordedSpan) span.end(this.#at(monotonicMs));
  }

  /**
   * A performance.now() time as the time of a span. Every span of the process is given its times
   * from this one clock (read once per span), so that no step seems to begin before its request.
   */
  #at(monotonicMs: number): HrTime {
    return millisToHrTime(this.#anchor + monotonicMs);
  }

  /** The traceparent (and tracestate) that makes `span` the parent of a call sent on. */
  headersFor(span: Span): Readonly<TraceHeaders> {
    // Written here, it needs no context made for the span (a Map copied per call, by the SDK's propagator).
    return span instanceof UnrecordedSpan ? span.headers : traceHeadersOf(span.spanContext());
  }

  /** Sends what is queued, within the export timeout, and stops. */
  async shutdown(): Promise<void> {
    await this.#queue.shutdown();
    await this.#thread.close();
  }

  async forceFlush(): Promise<void> {
    await this.#queue.forceFlush();
  }
}


/** Marks a span failed, with the error type the conventions ask for. */
export function spanFailed(span: Span, errorType: string, message?: string): void {
  span.setAttribute("error.type", errorType);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

export type { Span };
export { SpanKind };
