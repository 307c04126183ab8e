import { randomBytes } from "node:crypto";
import { ROOT_CONTEXT, SamplingDecision, SpanKind, TraceFlags, trace, type SpanContext } from "@opentelemetry/api";
import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler, type Sampler } from "@opentelemetry/sdk-trace";
import { describe, expect, it } from "vitest";
import { foldOfBytes, foldOfHex, samplingDecider, type SamplerName } from "../src/platform/sampling.ts";

/**
 * Warden decides sampling itself (src/platform/sampling.ts says why); it must decide as the SDK's
 * samplers do, for every sampler OTEL_TRACES_SAMPLER names, with and without a caller's span.
 */

function sdkSampler(name: SamplerName, ratio: number): Sampler {
  const ratioSampler = new TraceIdRatioBasedSampler(ratio);
  switch (name) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return ratioSampler;
    case "parentbased_always_on":
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: ratioSampler });
  }
}

const names: SamplerName[] = ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"];

describe("the trace ID's fold", () => {
  it("is the XOR of its four 32-bit words, from its hex or from its bytes", () => {
    // 0x01234567 ^ 0x89abcdef ^ 0xfedcba98 ^ 0x76543210 = 0x00000000; flip the last digit: 0x00000001.
    expect(foldOfHex("0123456789abcdeffedcba9876543210")).toBe(0);
    expect(foldOfHex("0123456789abcdeffedcba9876543211")).toBe(1);
    // 0xffffffff ^ 0 ^ 0 ^ 0: past a signed 32-bit integer's range, still positive.
    expect(foldOfHex("ffffffff000000000000000000000000")).toBe(0xffffffff);
    for (let i = 0; i < 100; i++) {
      const bytes = randomBytes(20);
      expect(foldOfBytes(bytes, 4)).toBe(foldOfHex(bytes.toString("hex", 4, 20)));
    }
  });
});

describe("samplingDecider", () => {
  // Trace IDs at the ratio's boundary, and random ones.
  const edges = ["00000000000000000000000000000001", "7fffffff000000000000000000000000", "80000000000000000000000000000000", "19999999000000000000000000000000", "1999999a000000000000000000000000", "ffffffffffffffffffffffffffffffff"];
  const ids = [...edges, ...Array.from({ length: 2_000 }, () => randomBytes(16).toString("hex"))];
  const parents: (SpanContext | undefined)[] = [
    undefined,
    { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: TraceFlags.SAMPLED, isRemote: true },
    { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: TraceFlags.NONE, isRemote: true },
  ];

  for (const name of names) {
    for (const ratio of [0, 0.1, 0.5, 1]) {
      it(`${name}, ratio ${ratio}: decides as the SDK's sampler for every trace ID and parent`, () => {
        const ours = samplingDecider(name, ratio);
        const theirs = sdkSampler(name, ratio);
        let disagreements = 0;
        let sampled = 0;
        for (const parent of parents) {
          const context = parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT;
          for (const id of ids) {
            const expected = theirs.shouldSample(context, id, "POST", SpanKind.SERVER, {}, []).decision === SamplingDecision.RECORD_AND_SAMPLED;
            const actual = ours(foldOfHex(id), parent);
            if (actual !== expected) disagreements += 1;
            if (actual) sampled += 1;
          }
        }
        expect(disagreements).toBe(0);
        // Not a vacuous agreement: the ratio samplers keep some and drop some when 0 < ratio < 1.
        if (name.endsWith("traceidratio") && ratio > 0 && ratio < 1) {
          expect(sampled).toBeGreaterThan(0);
          expect(sampled).toBeLessThan(ids.length * parents.length);
        }
      });
    }
  }

  it("at one in ten, 0x19999998 is the last fold kept (the bound is ⌊0.1 × (2³² − 1)⌋ = 0x19999999, kept only under it)", () => {
    const decide = samplingDecider("traceidratio", 0.1);
    expect(decide(0x19999998, undefined)).toBe(true);
    expect(decide(0x19999999, undefined)).toBe(false);
    expect(samplingDecider("traceidratio", 1)(0xffffffff, undefined)).toBe(true);
    expect(samplingDecider("traceidratio", 0)(0, undefined)).toBe(false);
  });
});
