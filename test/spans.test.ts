import { SpanKind, SpanStatusCode, TraceFlags } from "@opentelemetry/api";
import { TraceState } from "@opentelemetry/core";
import { ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import { pino } from "pino";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { encodeTraceExport } from "./support/otlp-encoded.ts";
import { RecordedSpan, type SpanOrigin } from "../src/platform/spans.ts";
import { foldOfHex, samplingDecider, type SamplerName } from "../src/platform/sampling.ts";
import { Tracing } from "../src/platform/tracing.ts";
import { startOtlpReceiver, type OtlpReceiver } from "./support/otlp-receiver.ts";
import { tracingSettings } from "./support/tracing-settings.ts";

/**
 * Warden's spans (src/platform/spans.ts) stand in for the SDK's: the SDK's serializer must read
 * them as it reads its own, their setters must behave as the SDK's do, and the spans `Tracing`
 * makes must be sampled as the SDK would sample them.
 */

function origin(): SpanOrigin & { spans: ReadableSpan[] } {
  const spans: ReadableSpan[] = [];
  return { resource: resourceFromAttributes({ "service.name": "warden-test" }), scope: { name: "warden" }, spans, ended: (span) => spans.push(span) };
}

const context = { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "00f067aa0ba902b7", traceFlags: TraceFlags.SAMPLED };

describe("RecordedSpan", () => {
  it("is read by the SDK's serializer byte for byte as Warden's encoder writes it", () => {
    const o = origin();
    const parent = { traceId: context.traceId, spanId: "b7ad6b7169203331", traceFlags: TraceFlags.SAMPLED, isRemote: true, traceState: new TraceState("vendor=a") };
    const server = new RecordedSpan(o, "POST", SpanKind.SERVER, { ...context, traceState: parent.traceState }, parent, [1_790_000_000, 5_000], { "http.request.method": "POST" }, [
      { context: { ...parent, traceId: "4bf92f3577b34da6a3ce929d0e0e4736" } },
    ]);
    const client = new RecordedSpan(o, "chat gpt-4o-mini", SpanKind.CLIENT, { ...context, spanId: "53995c3f42cd8ad8" }, server.spanContext(), [1_790_000_000, 9_000], {
      "gen_ai.request.model": "gpt-4o-mini",
    });
    client.setAttribute("http.response.status_code", 502).setStatus({ code: SpanStatusCode.ERROR, message: "upstream refused" });
    client.end([1_790_000_001, 0]);
    server.setAttributes({ "gen_ai.usage.input_tokens": 20, "warden.stream": false }).updateName("chat gpt-4o-mini");
    server.end([1_790_000_001, 500]);
    expect(o.spans).toEqual([client, server]);
    expect(server.duration).toEqual([0, 999_995_500]);
    const theirs = ProtobufTraceSerializer.serializeRequest(o.spans)!;
    expect(Buffer.compare(Buffer.from(encodeTraceExport(o.spans)), Buffer.from(theirs))).toBe(0);
  });

  it("sets status, name and attributes as the SDK's span does, and not after its end", () => {
    const o = origin();
    const span = new RecordedSpan(o, "POST", SpanKind.SERVER, context, undefined, [1, 0], {});
    span.setStatus({ code: SpanStatusCode.UNSET, message: "ignored" });
    expect(span.status).toEqual({ code: SpanStatusCode.UNSET });
    span.setStatus({ code: SpanStatusCode.OK, message: "only an error keeps a message" });
    expect(span.status).toEqual({ code: SpanStatusCode.OK });
    span.setStatus({ code: SpanStatusCode.ERROR, message: "OK is final" });
    expect(span.status).toEqual({ code: SpanStatusCode.OK });
    span.setAttributes({ kept: "yes", skipped: undefined });
    expect(span.attributes).toEqual({ kept: "yes" });
    expect(span.isRecording()).toBe(true);
    span.end([2, 0]);
    span.end([3, 0]);
    expect(o.spans).toHaveLength(1);
    expect(span.endTime).toEqual([2, 0]);
    expect(span.isRecording()).toBe(false);
    span.setAttribute("late", 1).updateName("renamed");
    expect(span.attributes).toEqual({ kept: "yes" });
    expect(span.name).toBe("POST");
  });
});

describe("Tracing's spans", () => {
  let receiver: OtlpReceiver | undefined;
  let tracing: Tracing | undefined;
  afterEach(async () => {
    await tracing?.shutdown();
    await receiver?.close();
  });

  async function traced(sampler: SamplerName, samplerRatio: number): Promise<Tracing> {
    receiver = await startOtlpReceiver();
    const settings = tracingSettings(receiver.url, { sampler, samplerRatio, scheduleDelayMs: 5_000 });
    return (tracing = new Tracing(settings, new Registry(), pino({ level: "silent" })));
  }

  const none = { requestId: undefined, traceparent: undefined, tracestate: undefined };

  for (const sampler of ["traceidratio", "parentbased_traceidratio"] as const) {
    it(`${sampler}: a request's children are kept exactly when the request is`, async () => {
      const t = await traced(sampler, 0.5);
      const decide = samplingDecider(sampler, 0.5);
      const kept = new Set<string>();
      for (let i = 0; i < 200; i++) {
        const { span, requestId } = t.startRequest("POST", none, {});
        const child = t.startChild(span, "chat m", { kind: SpanKind.CLIENT });
        const traceparent = t.headersFor(child).traceparent!;
        expect(traceparent.slice(3, 35)).toBe(requestId);
        expect(traceparent.endsWith(span.isRecording() ? "-01" : "-00")).toBe(true);
        // The decision is the sampler's of the trace ID as written (its hex, not only its bytes).
        expect(span.isRecording()).toBe(decide(foldOfHex(requestId), undefined));
        expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
        if (span.isRecording()) kept.add(requestId);
        t.step(span, "guardrails", performance.now() - 1, performance.now());
        t.end(child);
        t.end(span);
      }
      await t.forceFlush();
      // Half the trace IDs, give or take: the ratio samplers decide by the ID's lower 8 bytes.
      expect(kept.size).toBeGreaterThan(60);
      expect(kept.size).toBeLessThan(140);
      const spans = receiver!.spans;
      expect(new Set(spans.map((s) => s.traceId))).toEqual(kept);
      expect(spans).toHaveLength(3 * kept.size);
      for (const traceId of kept) {
        const of = spans.filter((s) => s.traceId === traceId);
        const server = of.find((s) => s.kind === 2)!;
        expect(of.filter((s) => s.parentSpanId === server.spanId).map((s) => s.name).sort()).toEqual(["chat m", "guardrails"]);
      }
    });
  }

  it("continues a sampled caller's trace under parentbased_always_off, with its trace state, and keeps none of its own", async () => {
    const t = await traced("parentbased_always_off", 1);
    const own = t.startRequest("POST", none, {});
    expect(own.span.isRecording()).toBe(false);
    const caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    const { span, requestId } = t.startRequest("POST", { requestId: undefined, traceparent: caller, tracestate: "vendor=a" }, { "http.request.method": "POST" });
    expect(requestId).toBe("0af7651916cd43dd8448eb211c80319c");
    const child = t.startChild(span, "chat m", { attributes: { "server.address": "127.0.0.1" } });
    expect(t.headersFor(child)).toEqual({ traceparent: `00-${requestId}-${child.spanContext().spanId}-01`, tracestate: "vendor=a" });
    t.end(child);
    t.end(span);
    t.end(own.span);
    await t.forceFlush();
    const spans = receiver!.spans;
    expect(spans.map((s) => [s.name, s.traceId, s.parentSpanId, s.traceState])).toEqual([
      ["chat m", requestId, span.spanContext().spanId, "vendor=a"],
      ["POST", requestId, "b7ad6b7169203331", "vendor=a"],
    ]);
    expect(spans[1]!.attributes).toEqual({ "http.request.method": "POST", "warden.request_id": requestId });
    expect(spans[0]!.attributes).toEqual({ "server.address": "127.0.0.1" });
  });
});
