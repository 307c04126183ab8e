import { context, SpanKind, SpanStatusCode, trace, TraceFlags, type Attributes } from "@opentelemetry/api";
import { TraceState } from "@opentelemetry/core";
import { ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from "@opentelemetry/sdk-trace";
import { describe, expect, it } from "vitest";
import { encodeTraceExport } from "./support/otlp-encoded.ts";

/**
 * Warden's OTLP encoder against the SDK's own serializer: the same spans must give the same bytes,
 * so that a collector cannot tell them apart. The spans cover every field the encoder writes and
 * every length it writes in more than one byte.
 */

async function finished(make: (provider: TracerProvider) => void, resource = resourceFromAttributes({ "service.name": "warden-test" })): Promise<ReadableSpan[]> {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ resource, spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  make(provider);
  await provider.forceFlush();
  const spans = exporter.getFinishedSpans();
  await provider.shutdown();
  return spans;
}

function expectSameBytes(spans: ReadableSpan[]): void {
  const theirs = ProtobufTraceSerializer.serializeRequest(spans)!;
  const ours = encodeTraceExport(spans);
  expect(ours.length).toBe(theirs.length);
  expect(Buffer.compare(Buffer.from(ours), Buffer.from(theirs))).toBe(0);
}

const remote = {
  traceId: "0af7651916cd43dd8448eb211c80319c",
  spanId: "b7ad6b7169203331",
  traceFlags: TraceFlags.SAMPLED,
  isRemote: true,
  traceState: new TraceState("vendor=a,other=b"),
};

describe("encodeTraceExport", () => {
  it("writes a gateway request's spans as the SDK does", async () => {
    const spans = await finished((provider) => {
      const tracer = provider.getTracer("warden");
      for (let i = 0; i < 3; i++) {
        const server = tracer.startSpan("POST", { kind: SpanKind.SERVER, attributes: { "http.request.method": "POST", "warden.request_id": `req-${i}` } });
        const client = tracer.startSpan("chat gpt-4o-mini", { kind: SpanKind.CLIENT, attributes: { "gen_ai.operation.name": "chat", "server.address": "127.0.0.1" } }, trace.setSpan(context.active(), server));
        client.setAttribute("http.response.status_code", 200);
        client.end();
        server.setAttributes({ "http.response.status_code": 200, "gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 23 + i, "warden.stream": false });
        server.end();
      }
    });
    expect(spans).toHaveLength(6);
    expectSameBytes(spans);
  });

  it("writes every kind of attribute value, events, links, trace state, remote parents and error status", async () => {
    const values: Attributes = {
      text: "plain",
      unicode: "naïve café, 東京, emoji 🎉",
      empty: "",
      long: "x".repeat(200),
      // Three bytes a character: 126 bytes (a one-byte length) and 135 (two).
      cjk42: "東".repeat(42),
      cjk45: "東".repeat(45),
      zero: 0,
      negative: -5,
      minInt: -(2 ** 63),
      large: 2 ** 40,
      past53: 2 ** 60,
      fraction: 1.5,
      negativeFraction: -0.25,
      infinite: Infinity,
      notANumber: NaN,
      yes: true,
      no: false,
      strings: ["a", "ü", ""],
      numbers: [1, -2, 3.5],
      booleans: [true, false],
      holes: ["a", null, undefined, "b"],
      none: [],
    };
    const spans = await finished((provider) => {
      const tracer = provider.getTracer("warden", "1.2.3");
      const parent = trace.setSpanContext(context.active(), remote);
      const span = tracer.startSpan("unicode näme 🎉", { kind: SpanKind.CONSUMER, attributes: values, links: [{ context: remote, attributes: { why: "request id" } }, { context: { ...remote, traceState: undefined, isRemote: false } }] }, parent);
      span.addEvent("first", { k: "v", n: 1 });
      span.addEvent("second");
      span.setStatus({ code: SpanStatusCode.ERROR, message: "upstream said 502 — ü" });
      span.end();
      const ok = tracer.startSpan("internal", { kind: SpanKind.INTERNAL });
      ok.setStatus({ code: SpanStatusCode.OK });
      ok.end();
      const unsampled = { ...remote, traceFlags: TraceFlags.NONE, isRemote: false };
      tracer.startSpan("child of a local parent", {}, trace.setSpanContext(context.active(), unsampled)).end();
    });
    expect(spans.length).toBeGreaterThanOrEqual(2);
    expectSameBytes(spans);
  });

  it("writes times whose nanoseconds carry into the high word", async () => {
    const times: [number, number][] = [
      [0, 0],
      [1, 0],
      [4, 294_967_296],
      [65_535, 999_999_999],
      [65_536, 0],
      [1_764_264_000, 999_999_999],
      [4_294_967_295, 999_999_999],
    ];
    const spans = await finished((provider) => {
      const tracer = provider.getTracer("warden");
      for (const time of times) tracer.startSpan(`at ${time[0]}.${time[1]}`, { startTime: time }).end(time);
    });
    expectSameBytes(spans);
    const view = Buffer.from(encodeTraceExport(spans.slice(-1)));
    // The last span's start: the fixed64 after its tag (field 7, wire type 1: 0x39), which follows its name.
    const name = "at 4294967295.999999999";
    const at = view.indexOf(name) + name.length + 2; // the name, then its kind (field 6: 0x30, INTERNAL)
    expect(view[at]).toBe(0x39);
    expect(view.readBigUInt64LE(at + 1)).toBe(4_294_967_295n * 1_000_000_000n + 999_999_999n);
  });

  it("groups spans by resource and scope in the order first met", async () => {
    const first = await finished((provider) => {
      provider.getTracer("a").startSpan("a1").end();
      provider.getTracer("b", "2.0.0").startSpan("b1").end();
      provider.getTracer("a").startSpan("a2").end();
    });
    const second = await finished((provider) => provider.getTracer("a").startSpan("other resource").end(), resourceFromAttributes({ "service.name": "other", "host.id": 7 }));
    expectSameBytes([...first, second[0]!, ...first]);
  });

  it("writes lengths of several bytes: a span over 16 KiB and a batch over 2 MiB", async () => {
    const spans = await finished((provider) => {
      const tracer = provider.getTracer("warden");
      tracer.startSpan("big", { attributes: { body: "y".repeat(20_000) } }).end();
      for (let i = 0; i < 300; i++) tracer.startSpan(`span ${i}`, { attributes: { body: "z".repeat(8_000), i } }).end();
    });
    const bytes = encodeTraceExport(spans);
    expect(bytes.length).toBeGreaterThan(2 * 1024 * 1024);
    expectSameBytes(spans);
    // The encoder's buffer is reused: a small batch after the big one is still right.
    expectSameBytes(spans.slice(0, 2));
  });

  it("writes the same bytes again for the same spans (its caches change nothing)", async () => {
    const spans = await finished((provider) => provider.getTracer("warden").startSpan("again", { attributes: { "gen_ai.request.model": "m" } }).end());
    const once = encodeTraceExport(spans);
    const twice = encodeTraceExport(spans);
    expect(Buffer.compare(Buffer.from(once), Buffer.from(twice))).toBe(0);
    expectSameBytes(spans);
  });

  it("writes a value that repeats, then changes, then comes back, under span, link and event attributes alike", async () => {
    // The encoder keeps a key's KeyValue once its value repeats: every turn of each key is here.
    const turns: Attributes[] = [
      { model: "a", tokens: 1, stream: false, path: "/v1/x" },
      { model: "a", tokens: 1, stream: false, path: "/v1/x" },
      { model: "a", tokens: 2, stream: true, path: ["/v1/x"] },
      { model: "b", tokens: 2, stream: true, path: ["/v1/x"] },
      { model: "a", tokens: 2, stream: false, path: "/v1/x" },
      { model: "a", tokens: NaN, stream: false },
      { model: "a", tokens: NaN, stream: false, path: "/v1/x" },
    ];
    const spans = await finished((provider) => {
      const tracer = provider.getTracer("warden");
      for (const attributes of turns) {
        const span = tracer.startSpan("turn", { attributes, links: [{ context: remote, attributes }] });
        span.addEvent("event", { model: attributes.model as string });
        span.end();
      }
    });
    expect(spans).toHaveLength(turns.length);
    for (let i = 0; i < spans.length; i++) expectSameBytes(spans.slice(i, i + 1));
    expectSameBytes(spans);
  });
});
