import { SpanStatusCode, type Attributes, type AttributeValue, type HrTime, type Link, type SpanContext, type SpanKind, type SpanStatus } from "@opentelemetry/api";
import { hrTimeDuration, type InstrumentationScope } from "@opentelemetry/core";
import type { Resource } from "@opentelemetry/resources";
import type { ReadableSpan, TimedEvent } from "@opentelemetry/sdk-trace";

/**
 * What the gateway and the management API do with a span: OpenTelemetry's `Span`, less what
 * Warden never calls (events, links after the start, exceptions). Ending one is `Tracing`'s.
 * A span the sampler left out is an `UnrecordedSpan`, which has all of these and does nothing.
 */
export interface Span {
  spanContext(): SpanContext;
  isRecording(): boolean;
  setAttribute(key: string, value: AttributeValue): this;
  setAttributes(attributes: Attributes): this;
  setStatus(status: SpanStatus): this;
  updateName(name: string): this;
}

/** The W3C headers that make a span the parent of a call sent on. */
export interface TraceHeaders {
  traceparent: string;
  tracestate?: string;
}

/**
 * A request the sampler left out: its context, and the W3C headers that carry it (and the
 * decision not to sample) to the calls it sends on, made once with the context. What it is asked
 * to record it drops, as the API's non-recording span does.
 */
export class UnrecordedSpan implements Span {
  readonly #context: SpanContext;
  readonly headers: Readonly<TraceHeaders>;

  constructor(context: SpanContext, headers: TraceHeaders) {
    this.#context = context;
    this.headers = headers;
  }

  spanContext(): SpanContext {
    return this.#context;
  }

  isRecording(): boolean {
    return false;
  }

  setAttribute(): this {
    return this;
  }

  setAttributes(): this {
    return this;
  }

  setStatus(): this {
    return this;
  }

  updateName(): this {
    return this;
  }
}

/** What every span of one process shares: where it was made, and where it goes when it ends. */
export interface SpanOrigin {
  resource: Resource;
  scope: InstrumentationScope;
  /** Where an ended span goes: the span queue (span-queue.ts). */
  ended(span: ReadableSpan): void;
}

/**
 * A span the sampler kept, as the SDK's span processors and serializer read one
 * (`ReadableSpan`), with its fields set directly. Not the SDK's `SpanImpl`, because of what that
 * costs per span and Warden does not need: it checks every attribute value (a `WeakSet` per value,
 * a third of the bytes tracing allocated), counts attributes against limits, reads two clocks at
 * its start, and counts itself for the SDK's own metrics. Warden's attributes are its own, typed
 * `AttributeValue`s, a score or so per span, none of them named by a caller; its times come from
 * one clock (`Tracing`). Measured in `bench/gateway/observability.ts`: docs/performance.md,
 * "Observability cost".
 */
export class RecordedSpan implements Span, ReadableSpan {
  readonly #origin: SpanOrigin;
  readonly #context: SpanContext;
  name: string;
  readonly kind: SpanKind;
  readonly parentSpanContext: SpanContext | undefined;
  readonly startTime: HrTime;
  endTime: HrTime = [0, 0];
  status: SpanStatus = { code: SpanStatusCode.UNSET };
  readonly attributes: Attributes;
  readonly links: Link[];
  readonly events: TimedEvent[] = [];
  ended = false;
  readonly droppedAttributesCount = 0;
  readonly droppedEventsCount = 0;
  readonly droppedLinksCount = 0;

  constructor(
    origin: SpanOrigin,
    name: string,
    kind: SpanKind,
    context: SpanContext,
    parent: SpanContext | undefined,
    startTime: HrTime,
    attributes: Attributes,
    links: Link[] = [],
  ) {
    this.#origin = origin;
    this.#context = context;
    this.name = name;
    this.kind = kind;
    this.parentSpanContext = parent;
    this.startTime = startTime;
    this.attributes = attributes;
    this.links = links;
  }

  get resource(): Resource {
    return this.#origin.resource;
  }

  get instrumentationScope(): InstrumentationScope {
    return this.#origin.scope;
  }

  get duration(): HrTime {
    return hrTimeDuration(this.startTime, this.endTime);
  }

  spanContext(): SpanContext {
    return this.#context;
  }

  isRecording(): boolean {
    return !this.ended;
  }

  setAttribute(key: string, value: AttributeValue): this {
    if (!this.ended) this.attributes[key] = value;
    return this;
  }

  setAttributes(attributes: Attributes): this {
    if (this.ended) return this;
    for (const key in attributes) {
      const value = attributes[key];
      if (value !== undefined) this.attributes[key] = value;
    }
    return this;
  }

  /** As the SDK's: UNSET changes nothing, OK is final, and only an error keeps its message. */
  setStatus(status: SpanStatus): this {
    if (this.ended || status.code === SpanStatusCode.UNSET || this.status.code === SpanStatusCode.OK) return this;
    this.status = status.code === SpanStatusCode.ERROR && typeof status.message === "string" ? { code: status.code, message: status.message } : { code: status.code };
    return this;
  }

  updateName(name: string): this {
    if (!this.ended) this.name = name;
    return this;
  }

  /** Ends the span at `time` and hands it to the processors; a second end does nothing. */
  end(time: HrTime): void {
    if (this.ended) return;
    this.endTime = time;
    this.ended = true;
    this.#origin.ended(this);
  }
}
