import { spawn } from "node:child_process";
import { once } from "node:events";
import { Writable } from "node:stream";
import pino from "pino";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { SpanExportThread } from "../src/platform/span-export-thread.ts";
import { Tracing, type TracingSettings } from "../src/platform/tracing.ts";
import { startOtlpReceiver, type OtlpReceiver, type OtlpReceiverOptions } from "./support/otlp-receiver.ts";
import { tracingSettings } from "./support/tracing-settings.ts";
import { until } from "./support/wait.ts";

/**
 * The trace queue as Tracing sets it up (Warden's span queue and OTLP encoding, the SDK's exporter
 * on the exporter's thread), against collectors on loopback: batches leave when full or when
 * their delay has passed, one export at a time; the queue is bounded, and what it holds, drops,
 * sends and fails to send is on /metrics; a refused export is logged.
 */

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function tracingAt(url: string, overrides: Partial<TracingSettings>): { tracing: Tracing; registry: Registry; lines: Record<string, unknown>[] } {
  const registry = new Registry();
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n")) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const tracing = new Tracing(tracingSettings(url, overrides), registry, pino({ level: "info" }, sink));
  closers.push(() => tracing.shutdown());
  return { tracing, registry, lines };
}

const none = { requestId: undefined, traceparent: undefined, tracestate: undefined };

function endSpans(tracing: Tracing, names: string[]): void {
  for (const name of names) tracing.end(tracing.startRequest(name, none, {}).span);
}

async function sample(registry: Registry, name: string): Promise<number> {
  const match = new RegExp(`^${name} (\\S+)$`, "m").exec(await registry.metrics());
  if (!match) throw new Error(`${name} is not on /metrics`);
  return Number(match[1]);
}

/** A collector on loopback, closed after the test. */
async function receiverFor(options: OtlpReceiverOptions = {}): Promise<OtlpReceiver> {
  const receiver = await startOtlpReceiver(options);
  closers.push(() => receiver.close());
  return receiver;
}

describe("the trace queue", () => {
  it("sends a batch when it is full, keeps the rest until a flush, and counts what was sent", async () => {
    const receiver = await receiverFor();
    const { tracing, registry } = tracingAt(receiver.url, { maxExportBatchSize: 3 });
    endSpans(tracing, ["a", "b", "c", "d", "e", "f", "g"]);
    await until(async () => (await sample(registry, "warden_trace_spans_exported_total")) === 6, "two full batches to be exported", 5_000);
    expect(receiver.spans.map((s) => s.name)).toEqual(["a", "b", "c", "d", "e", "f"]);
    expect(await sample(registry, "warden_trace_queue_spans")).toBe(1);
    await tracing.forceFlush();
    expect(receiver.spans.map((s) => s.name)).toEqual(["a", "b", "c", "d", "e", "f", "g"]);
    expect(receiver.spans[6]!.resource).toEqual({ "service.name": "warden-test" });
    expect(await sample(registry, "warden_trace_spans_exported_total")).toBe(7);
    expect(await sample(registry, "warden_trace_queue_spans")).toBe(0);
  });

  it("cuts a batch larger than the queue to the queue's size, as the SDK does, and sends it when full", async () => {
    const receiver = await receiverFor();
    const { tracing, registry } = tracingAt(receiver.url, { maxQueueSize: 3, maxExportBatchSize: 10 });
    endSpans(tracing, ["a", "b", "c"]);
    await until(async () => (await sample(registry, "warden_trace_spans_exported_total")) === 3, "the full queue to be sent without waiting for the delay", 5_000);
    expect(receiver.spans.map((s) => s.name)).toEqual(["a", "b", "c"]);
  });

  it("sends a batch that is not full once its delay has passed", async () => {
    const receiver = await receiverFor();
    const { tracing } = tracingAt(receiver.url, { scheduleDelayMs: 50 });
    endSpans(tracing, ["late"]);
    await until(async () => receiver.spans.length === 1, "the span to be exported after the delay", 5_000);
    expect(receiver.spans[0]!.name).toBe("late");
  });

  it("sends one export at a time, and drops what does not fit in the queue meanwhile", async () => {
    const held = await receiverFor({ hold: true });
    const { tracing, registry } = tracingAt(held.url, { maxExportBatchSize: 2, maxQueueSize: 4 });
    // The first two leave at once and hang at the collector; four more wait; the last four are dropped.
    endSpans(tracing, ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"]);
    await until(async () => held.contentTypes.length === 1, "the first export to reach the collector", 5_000);
    expect(await sample(registry, "warden_trace_queue_spans")).toBe(4);
    expect(await sample(registry, "warden_trace_spans_dropped_total")).toBe(4);
    expect(held.contentTypes).toHaveLength(1);
    held.release();
    await tracing.forceFlush();
    expect(held.contentTypes).toHaveLength(3);
    expect(await sample(registry, "warden_trace_spans_exported_total")).toBe(6);
    expect(await sample(registry, "warden_trace_queue_spans")).toBe(0);
  });

  it("sends a full queue on a flush, however small its batches, while an export is still out", async () => {
    const held = await receiverFor({ hold: true });
    const { tracing, registry } = tracingAt(held.url, { maxExportBatchSize: 2, maxQueueSize: 100 });
    const names = Array.from({ length: 70 }, (_, i) => `s${i}`);
    endSpans(tracing, names);
    await until(async () => held.contentTypes.length === 1, "the first export to reach the collector", 5_000);
    // 34 batches wait behind the one held: the flush sends them all at once.
    const flushed = tracing.forceFlush();
    await until(async () => held.contentTypes.length === 35, "every batch to reach the collector", 5_000);
    held.release();
    await flushed;
    expect(await sample(registry, "warden_trace_spans_exported_total")).toBe(70);
    expect(await sample(registry, "warden_trace_spans_export_failed_total")).toBe(0);
  });

  it("counts and logs an export the collector refuses, and goes on with the next", async () => {
    const refusing = await receiverFor({ status: 400 });
    const { tracing, registry, lines } = tracingAt(refusing.url, { maxExportBatchSize: 2 });
    endSpans(tracing, ["a", "b", "c", "d"]);
    await until(async () => (await sample(registry, "warden_trace_spans_export_failed_total")) === 4, "both exports to fail", 5_000);
    expect(refusing.contentTypes).toHaveLength(2);
    expect(await sample(registry, "warden_trace_spans_exported_total")).toBe(0);
    const failures = lines.filter((l) => l.msg === "span export failed");
    expect(failures).toHaveLength(2);
    expect(failures[0]).toMatchObject({ component: "tracing", level: 40 });
    expect(typeof failures[0]!.err).toBe("string");
  });

  it("exports nothing for a request not sampled, and still passes its trace on, marked not sampled", async () => {
    const receiver = await receiverFor();
    const { tracing, registry } = tracingAt(receiver.url, { sampler: "always_off" });
    const { span, requestId } = tracing.startRequest("POST", none, { "http.request.method": "POST" });
    expect(span.isRecording()).toBe(false);
    const call = tracing.startChild(span, "chat m", { attributes: { "gen_ai.request.model": "m" } });
    tracing.step(span, "input guardrails", performance.now() - 1, performance.now());
    const { traceId, spanId } = span.spanContext();
    expect(traceId).toBe(requestId);
    expect(tracing.headersFor(call)).toEqual({ traceparent: `00-${traceId}-${spanId}-00` });
    tracing.end(call);
    tracing.end(span);
    await tracing.forceFlush();
    expect(receiver.spans).toEqual([]);
    expect(await sample(registry, "warden_trace_queue_spans")).toBe(0);
  });

  it("follows a caller that did not sample its trace: nothing recorded, its trace and tracestate passed on", async () => {
    const receiver = await receiverFor();
    const { tracing } = tracingAt(receiver.url, {});
    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const headers = { requestId: undefined, traceparent: `00-${traceId}-b7ad6b7169203331-00`, tracestate: "vendor=a" };
    const { span, requestId } = tracing.startRequest("POST", headers, {});
    expect(span.isRecording()).toBe(false);
    expect(requestId).toBe(traceId);
    const sent = tracing.headersFor(tracing.startChild(span, "chat m"));
    expect(sent.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-00$`));
    expect(sent.traceparent).not.toContain("b7ad6b7169203331");
    expect(sent.tracestate).toBe("vendor=a");
    // The same caller with its trace sampled is recorded, under its span.
    const sampled = tracing.startRequest("POST", { ...headers, traceparent: `00-${traceId}-b7ad6b7169203331-01` }, {});
    expect(sampled.span.isRecording()).toBe(true);
    tracing.end(sampled.span);
    await tracing.forceFlush();
    expect(receiver.spans.map((s) => [s.traceId, s.parentSpanId, s.traceState])).toEqual([[traceId, "b7ad6b7169203331", "vendor=a"]]);
  });

  it("sends what is waiting on shutdown, and takes no span after it", async () => {
    const receiver = await receiverFor();
    const { tracing } = tracingAt(receiver.url, {});
    endSpans(tracing, ["before"]);
    await tracing.shutdown();
    expect(receiver.spans.map((s) => s.name)).toEqual(["before"]);
    endSpans(tracing, ["after"]);
    await tracing.forceFlush();
    expect(receiver.spans.map((s) => s.name)).toEqual(["before"]);
  });

  it("lets a process exit once its exports are answered, without a shutdown", async () => {
    const receiver = await receiverFor();
    const child = spawn(process.execPath, [new URL("./support/trace-and-return.ts", import.meta.url).pathname, receiver.url], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    const kill = setTimeout(() => child.kill("SIGKILL"), 20_000);
    const [code, signal] = (await once(child, "exit")) as [number | null, NodeJS.Signals | null];
    clearTimeout(kill);
    expect({ code, signal, out }).toEqual({ code: 0, signal: null, out: "flushed\n" });
    expect(receiver.spans.map((s) => s.name)).toEqual(["exits"]);
  });
});

describe("the span exporter's thread", () => {
  it("answers an export still out as failed when it is closed, and starts again for the next", async () => {
    const held = await receiverFor({ hold: true });
    const thread = new SpanExportThread({ url: `${held.url}/v1/traces`, headers: {}, timeoutMs: 5_000, concurrencyLimit: 30 });
    closers.push(() => thread.close());
    const out = thread.send(new Uint8Array(0), 0);
    await until(async () => held.contentTypes.length === 1, "the export to reach the collector", 5_000);
    await thread.close();
    expect(await out).toEqual({ id: 1, ok: false, error: "the span exporter was closed" });
    held.release();
    expect(await thread.send(new Uint8Array(0), 0)).toEqual({ id: 2, ok: true });
    expect(held.contentTypes).toEqual(["application/x-protobuf", "application/x-protobuf"]);
  });
});
