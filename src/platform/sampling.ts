import { TraceFlags, type SpanContext } from "@opentelemetry/api";

/** The samplers `OTEL_TRACES_SAMPLER` names. */
export type SamplerName = "always_on" | "always_off" | "traceidratio" | "parentbased_always_on" | "parentbased_always_off" | "parentbased_traceidratio";

/**
 * Whether a request's SERVER span is sampled, given its trace ID's fold (`foldOfHex`,
 * `foldOfBytes`) and the caller's span, if it sent one.
 */
export type SamplingDecider = (fold: number, parent: SpanContext | undefined) => boolean;

/**
 * The SDK's samplers' decisions (AlwaysOn, AlwaysOff, TraceIdRatioBased, and ParentBased over
 * each with its default delegates), for the one span Warden asks about: a request's, whose only
 * possible parent is the caller's. The SDK's objects are not used because of what the ratio
 * sampler costs a request: its `Context` made for the parent, the trace ID's hex checked with a
 * regular expression and folded character by character, 2,400 instructions a call in a whole
 * gateway under callgrind (docs/performance.md, "Instructions a call, whole gateways"), where
 * Warden has made or checked every trace ID already and folds a new one from its bytes. A test
 * holds these to the SDK's decisions.
 */
export function samplingDecider(name: SamplerName, ratio: number): SamplingDecider {
  // As TraceIdRatioBasedSampler: sampled when the fold is under ratio × (2³² − 1), every ID at 1.
  // `ratio` is OTEL_TRACES_SAMPLER_ARG, checked to be within 0 and 1 with the other settings.
  const upperBound = ratio >= 1 ? 2 ** 32 : Math.floor(ratio * 0xffffffff);
  const byRatio = (fold: number) => fold < upperBound;
  // ParentBased: a parent's flag decides; the root's sampler only without one.
  const parentSampled = (parent: SpanContext) => (parent.traceFlags & TraceFlags.SAMPLED) !== 0;
  switch (name) {
    case "always_on":
      return () => true;
    case "always_off":
      return () => false;
    case "traceidratio":
      return byRatio;
    case "parentbased_always_on":
      return (_, parent) => (parent ? parentSampled(parent) : true);
    case "parentbased_always_off":
      return (_, parent) => (parent ? parentSampled(parent) : false);
    case "parentbased_traceidratio":
      return (fold, parent) => (parent ? parentSampled(parent) : byRatio(fold));
  }
}

/** The four 32-bit words of a trace ID (32 hex digits), XORed: what TraceIdRatioBasedSampler compares. */
export function foldOfHex(traceId: string): number {
  const word = (at: number) => parseInt(traceId.slice(at, at + 8), 16);
  return (word(0) ^ word(8) ^ word(16) ^ word(24)) >>> 0;
}

/** `foldOfHex` of the trace ID that is `bytes[at, at + 16)` in hex. */
export function foldOfBytes(bytes: Buffer, at: number): number {
  // The words' XOR is the XOR of their bytes place by place (readUInt32BE four times costs more).
  const column = (i: number) => bytes[at + i]! ^ bytes[at + 4 + i]! ^ bytes[at + 8 + i]! ^ bytes[at + 12 + i]!;
  return ((column(0) << 24) | (column(1) << 16) | (column(2) << 8) | column(3)) >>> 0;
}
