/**
 * What the gateway's observability costs per request (`BENCH_ONLY=gateway-observability`; see
 * docs/performance.md, "Observability cost"): the Prometheus metrics recorded per request
 * (`GatewayMetrics.started` / `ended`, `WARDEN_GATEWAY_METRICS`), the access-log line (one pino
 * `info` line per request, `WARDEN_ACCESS_LOG`) and the spans (`OTEL_EXPORTER_OTLP_ENDPOINT`: the
 * request's and its provider call's, exported over OTLP/HTTP to a collector on loopback).
 *
 * 1. In process, no network: `started()` + `ended(…)` with the values of a successful responses
 *    call, against the same loop that builds the same measure and records nothing; and one
 *    access-log line as the pipeline writes it (`accessLine`'s members through an
 *    `AccessLineWriter` on the access logger) of a pino logger made as `createLogger` makes it, to
 *    /dev/null and to a file, buffered as the gateway's stdout is written (BatchedDestination), and
 *    to /dev/null with a write per line as pino's default destination does, against the log off; and a request's two spans as the pipeline makes them,
 *    exported in batches to a collector in this process, against none. Many iterations after a warm-up, in rounds that rotate
 *    the cases; µs of wall time on the loop and of process CPU (which also holds the writes that
 *    libuv's threads make) per request.
 * 2. End to end: three gateway processes on the same database: all three off, all three on, and
 *    all on again as a control (how much two identical processes differ); all pinned to core 1,
 *    one carrying traffic at a time, the load generator, the fake provider and the collector on
 *    core 0. The small request of the gateway section at c=64 (throughput, latency percentiles,
 *    the gateway's CPU per call), then at c=1. Each gateway's stdout (where the access log goes)
 *    is /dev/null, as in every gateway section; the bytes each process writes (`wchar` in
 *    /proc/<pid>/io) show that the log is on where it should be, and the collector's count of
 *    spans that tracing is.
 */
import { openSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { pino, type Logger } from "pino";
import { Registry } from "prom-client";
import { Pool } from "undici";
import { GatewayMetrics, type RequestMeasure } from "../../src/gateway/usage/metrics.ts";
import { accessLogger, BatchedDestination } from "../../src/platform/logger.ts";
import { AccessLineWriter, jsonText } from "../../src/platform/access-line.ts";
import { SpanKind, Tracing, type TraceHeaders, type TracingSettings } from "../../src/platform/tracing.ts";
import { latencyStats, type LatencyStats } from "../measure.ts";
import { machine } from "../report.ts";
import { sourceRevision, waitUntilServed, withHarness } from "./harness.ts";
import type { AllocationSite } from "./ipc.ts";
import { callOnce, closedLoop, rotation, shares, timed, type Target } from "./load.ts";
import { benchModel, completeAnswer, requestBody } from "./payloads.ts";
import { cpuSecondsOf, procAvailable, type BenchChild } from "./processes.ts";
import { loadLine, ms, setupLines, signed, us, verdict, type RunSetup } from "./report.ts";
import type { GatewayBenchOptions } from "./run.ts";
import { configureGateway } from "./setup.ts";

/** Metrics, tracing and the access log together may cost at most this share of the gateway's throughput (issue 12). */
export const observabilityTarget = 0.05;

type VariantName = "all off" | "all off (control process)" | "metrics only" | "access log only" | "tracing only" | "tracing only, one request in ten" | "all on" | "all on (control process)";

/** A gateway process of the end-to-end part: its settings, and what it must be seen to do (its log lines, its spans). */
interface Variant {
  name: VariantName;
  env: Record<string, string>;
  logs: boolean;
  /** Spans it must export per call, at least: 1 (every request sampled, two spans each), 0 (none), or a share. */
  spansPerCall: number;
}

interface Cell {
  variant: VariantName;
  requests: number;
  seconds: number;
  perSecond: number;
  latency: LatencyStats;
  roundPerSecond: number[];
  gatewayCpu: number;
  /** Bytes the gateway process wrote (write/writev: sockets and stdout) during the calls. */
  written: number;
  /** Spans the collector received from this process, in all. */
  spans: number;
  sequential: LatencyStats;
  /** Bytes the gateway allocated per call (V8's sampler, collected since or not), and where the most, per call too. */
  allocated: number;
  sites: AllocationSite[];
}

interface CpuCase {
  name: string;
  /** Per request, µs: wall time of the loop, and the process's CPU time (every thread). Mean over rounds; lowest and highest round of wall time. */
  wall: number;
  cpu: number;
  low: number;
  high: number;
}

interface ObservabilityBenchResult extends RunSetup {
  logLevel: string;
  plan: string;
  configuration: string[];
  payloads: string;
  concurrency: number;
  cpu: { iterations: number; warmup: number; rounds: number; metrics: CpuCase[]; log: CpuCase[]; tracing: CpuCase[]; lineBytes: number };
  cells: Cell[];
  load: { phase: string; seconds: number; otherCores: number }[];
  wallSeconds: number;
}

/** What the metrics read of a successful non-streamed responses call (the pipeline hands them its record of the request; latencies vary, so buckets do). */
function measureOf(i: number): RequestMeasure {
  return {
    endpoint: "responses",
    provider: "fake-openai",
    model: benchModel,
    ttfbMs: 0.3 + (i % 89) * 0.04,
    usage: { inputTokens: 20, outputTokens: 23 },
    overheadMs: 0.08 + (i % 13) * 0.01,
  };
}

/** The gateway's access logger, as `createLogger` (src/platform/logger.ts) makes the logger, gateway.ts narrows it and the pipeline derives it, to `destination`. */
function gatewayLogger(destination: pino.DestinationStream): Logger {
  return accessLogger(
    pino(
      {
        level: "info",
        base: { service: "warden" },
        redact: {
          paths: ["req.headers.authorization", "req.headers['x-api-key']", "*.secureKey", "*.adminKey"],
          censor: "[redacted]",
        },
      },
      destination,
    ).child({ component: "gateway" }),
  );
}

/** An OTLP/HTTP collector on loopback that answers every export 200 and counts them. */
export async function startCollector(): Promise<{ url: string; exports: () => number; close(): Promise<void> }> {
  let exports = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      exports += 1;
      res.writeHead(200, { "content-type": "application/x-protobuf", "content-length": 0 }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, exports: () => exports, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** A copy of `accessLine` in src/gateway/dataplane/pipeline.ts (not exported), for one successful call. */
function accessLine(i: number, requestId: string, keyId: string): string {
  const url = "/v1/responses";
  const query = url.indexOf("?");
  return (
    `"requestId":${jsonText(requestId)},"method":${jsonText("POST")},"path":${jsonText(query === -1 ? url : url.slice(0, query))},` +
    `"status":200,"latencyMs":${i % 7},"ttfbMs":${0.3 + (i % 89) * 0.04},"keyId":${jsonText(keyId)},` +
    `"model":${jsonText(benchModel)},"provider":${jsonText("fake-openai")},"inputTokens":20,` +
    `"outputTokens":23,"endpoint":${jsonText("responses")}`
  );
}

/** Runs each case `iterations` times after `warmup`, in `rounds` that rotate the order, in batches of `batch` with an event-loop turn between batches (so asynchronous writes proceed, as between requests). */
async function measureCases(cases: [string, (i: number) => unknown][], iterations: number, warmup: number, rounds: number, batch: number): Promise<CpuCase[]> {
  let sink: unknown;
  const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
  const run = async (fn: (i: number) => unknown, n: number): Promise<{ wall: number; cpu: number }> => {
    let wall = 0;
    const cpuBefore = process.cpuUsage();
    for (let done = 0; done < n; done += batch) {
      const m = Math.min(batch, n - done);
      const start = performance.now();
      for (let i = 0; i < m; i++) sink = fn(done + i);
      wall += performance.now() - start;
      await turn();
    }
    const cpu = process.cpuUsage(cpuBefore);
    return { wall: wall * 1000, cpu: cpu.user + cpu.system };
  };
  for (const [, fn] of cases) await run(fn, warmup);
  const perRound = new Map<string, { wall: number[]; cpu: number[] }>(cases.map(([name]) => [name, { wall: [], cpu: [] }]));
  const parts = shares(iterations, rounds);
  for (let round = 0; round < rounds; round++) {
    for (const [name, fn] of rotation(cases, round)) {
      const n = parts[round]!;
      const { wall, cpu } = await run(fn, n);
      perRound.get(name)!.wall.push(wall / n);
      perRound.get(name)!.cpu.push(cpu / n);
    }
  }
  if (sink === Symbol.for("never")) throw new Error("unreachable");
  const mean = (xs: number[]): number => xs.reduce((s, x) => s + x, 0) / xs.length;
  return cases.map(([name]) => {
    const r = perRound.get(name)!;
    return { name, wall: mean(r.wall), cpu: mean(r.cpu), low: Math.min(...r.wall), high: Math.max(...r.wall) };
  });
}

async function measureInProcess(iterations: number, warmup: number, rounds: number): Promise<ObservabilityBenchResult["cpu"]> {
  const batch = 64;
  // Metrics: the same measures built in both cases; only the recording differs.
  const metrics = new GatewayMetrics(new Registry(), { requestLog: () => 0, pipelineRows: () => 0 });
  const metricCases: [string, (i: number) => unknown][] = [
    ["nothing (the measure built, not recorded)", (i) => measureOf(i)],
    ["GatewayMetrics.started + ended", (i) => {
      const m = measureOf(i);
      metrics.started();
      metrics.ended(m, 200, 0.4 + (i % 97) * 0.05, undefined);
      return m;
    }],
  ];
  const metricFigures = await measureCases(metricCases, iterations, warmup, rounds, batch);

  // The access log: the line's inputs made in every case; the log off writes nothing.
  const file = path.join(os.tmpdir(), `warden-bench-access-log-${process.pid}.jsonl`);
  const devNull = openSync("/dev/null", "w");
  const fileFd = openSync(file, "w");
  // As createLogger writes (buffered, BatchedDestination), and as pino writes by default (a write per line when none is pending).
  const toDevNull = new BatchedDestination(devNull);
  const toFile = new BatchedDestination(fileFd);
  const unbuffered = pino.destination({ fd: openSync("/dev/null", "w"), sync: false, minLength: 0 });
  const loggers = { devNull: gatewayLogger(toDevNull), file: gatewayLogger(toFile), unbuffered: gatewayLogger(unbuffered) };
  const keyId = "0b6f3a52-8f1e-4c47-9a3e-5d2f7c1e9b40";
  const requestIds = Array.from({ length: 1024 }, (_, i) => `7d1c2e4f-0a3b-4c5d-8e9f-${String(i).padStart(12, "0")}`);
  const line = (logger: Logger) => {
    const writer = new AccessLineWriter(logger);
    return (i: number) => {
      const requestId = requestIds[i & 1023]!;
      if (writer.enabled) writer.write(accessLine(i, requestId, keyId));
      return requestId;
    };
  };
  const logCases: [string, (i: number) => unknown][] = [
    ["access log off", (i) => requestIds[i & 1023]!],
    ["access log on, to /dev/null", line(loggers.devNull)],
    ["access log on, to a file", line(loggers.file)],
    ["access log on, to /dev/null, a write per line (pino's default)", line(loggers.unbuffered)],
  ];
  try {
    const logFigures = await measureCases(logCases, iterations, warmup, rounds, batch);
    toFile.flushSync();
    const written = readFileSync(file, "utf8").split("\n").filter(Boolean);
    const expected = warmup + iterations;
    if (written.length !== expected) throw new Error(`the access-log file holds ${written.length} lines, expected ${expected}`);
    const sample = JSON.parse(written[written.length - 1]!) as Record<string, unknown>;
    if (sample.msg !== "request" || sample.component !== "gateway" || typeof sample.requestId !== "string") {
      throw new Error(`not an access-log line: ${written[written.length - 1]}`);
    }
    const tracingFigures = await measureTracing(iterations, warmup, rounds, batch);
    return { iterations, warmup, rounds, metrics: metricFigures, log: logFigures, tracing: tracingFigures, lineBytes: Buffer.byteLength(written[written.length - 1]!) + 1 };
  } finally {
    // Each stream writes what it holds and closes its file descriptor (its timer would write to a closed one).
    for (const stream of [toDevNull, toFile, unbuffered]) {
      stream.flushSync();
      stream.end();
    }
    rmSync(file, { force: true });
  }
}

/**
 * A request's spans as the pipeline makes them for a call with neither limits nor guardrails: its
 * SERVER span (no X-Request-ID, so a new trace) and its provider call's CLIENT span, whose
 * traceparent is written. Request `i`'s; also counted in instructions by tracing-instructions.ts.
 */
export function requestSpans(tracing: Tracing): (i: number) => TraceHeaders {
  const none = { requestId: undefined, traceparent: undefined, tracestate: undefined };
  return (i) => {
    const { span } = tracing.startRequest("POST", none, { "http.request.method": "POST" });
    // As the pipeline does: a request not sampled sends its own context on, with no child made.
    const call = span.isRecording()
      ? tracing.startChild(span, `chat ${benchModel}`, {
          kind: SpanKind.CLIENT,
          attributes: { "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": benchModel, "warden.provider": "fake-openai", "server.address": "127.0.0.1" },
        })
      : span;
    const headers = tracing.headersFor(call);
    call.setAttribute("http.response.status_code", 200);
    tracing.end(call);
    span.setAttributes({
      "http.response.status_code": 200, "url.path": "/v1/responses", "warden.endpoint": "responses", "gen_ai.operation.name": "chat",
      "gen_ai.request.model": benchModel, "gen_ai.provider.name": "openai", "warden.provider": "fake-openai", "gen_ai.usage.input_tokens": 20,
      "gen_ai.usage.output_tokens": 23 + (i & 1), "warden.stream": false, "warden.key_id": "0b6f3a52-8f1e-4c47-9a3e-5d2f7c1e9b40",
      "warden.workspace_id": "5d2f7c1e-8f1e-4c47-9a3e-0b6f3a529b40",
    });
    span.updateName(`chat ${benchModel}`);
    tracing.end(span);
    return headers;
  };
}

/** The tracing settings of the in-process case: the SDK's batch defaults, every request sampled. */
export function benchTracingSettings(collectorUrl: string): TracingSettings {
  return {
    url: `${collectorUrl}/v1/traces`,
    headers: {},
    timeoutMs: 10_000,
    serviceName: "warden-bench",
    resourceAttributes: {},
    sampler: "parentbased_always_on",
    samplerRatio: 1,
    scheduleDelayMs: 5_000,
    maxQueueSize: 2_048,
    maxExportBatchSize: 512,
  };
}

/** {@link requestSpans}, exported in batches, as the SDK's defaults have it, to a collector here. */
async function measureTracing(iterations: number, warmup: number, rounds: number, batch: number): Promise<CpuCase[]> {
  const collector = await startCollector();
  const settings = benchTracingSettings(collector.url);
  const every = new Tracing(settings, new Registry(), pino({ level: "silent" }));
  // One request in ten kept, as an operator with heavy traffic would sample.
  const tenth = new Tracing({ ...settings, sampler: "parentbased_traceidratio", samplerRatio: 0.1 }, new Registry(), pino({ level: "silent" }));
  const cases: [string, (i: number) => unknown][] = [
    ["no spans", (i) => i],
    ["a request's span and its provider call's, exported", requestSpans(every)],
    ["the same, one request in ten sampled (traceidratio 0.1)", requestSpans(tenth)],
  ];
  try {
    const figures = await measureCases(cases, iterations, warmup, rounds, batch);
    await every.forceFlush();
    if (collector.exports() === 0) throw new Error("the collector received no export: were the spans made?");
    return figures;
  } finally {
    await Promise.all([every.shutdown(), tenth.shutdown()]);
    await collector.close();
  }
}

/** The spans a gateway has exported so far, from its own /metrics (0 with tracing off). */
async function exportedSpans(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const match = /^warden_trace_spans_exported_total (\d+)$/m.exec(text);
  return match ? Number(match[1]) : 0;
}

/** Bytes a process has passed to write() and its kind so far (`wchar` in /proc/<pid>/io). */
function bytesWritten(pid: number): number {
  const match = /^wchar:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/io`, "utf8"));
  if (!match) throw new Error(`no wchar in /proc/${pid}/io`);
  return Number(match[1]);
}

export async function runGatewayObservabilityBench(options: GatewayBenchOptions): Promise<string> {
  if (!procAvailable()) throw new Error("the observability bench reads CPU time from /proc: it runs on Linux only");
  const { log } = options;
  const count = (n: number): number => Math.max(1, Math.round(n * options.scale));
  const plan = {
    cpuIterations: count(200_000),
    cpuWarmup: count(20_000),
    cpuRounds: 8,
    concurrency: 64,
    warmup: count(3000),
    calls: count(24_000),
    rounds: 6,
    sequential: count(2000),
    /** Per variant, through V8's allocation sampler (gc-hook.ts). */
    sampled: count(3000),
  };

  const started = performance.now();
  const date = new Date();
  log(`gateway observability: in process, ${plan.cpuIterations} requests per case after ${plan.cpuWarmup} of warm-up, ${plan.cpuRounds} rounds`);
  const cpu = await measureInProcess(plan.cpuIterations, plan.cpuWarmup, plan.cpuRounds);

  return withHarness(log, async (h) => {
    const { admin, cores, guarded } = h;
    log("gateway observability: starting the fake provider");
    const { url: providerUrl } = await h.startProvider();
    const configuration = await configureGateway(admin, providerUrl);
    const collector = await startCollector();
    h.defer(() => collector.close());
    log("gateway observability: starting eight gateways: all off (twice), each of metrics, access log and tracing alone, tracing sampled one in ten, all on, and all on again (control)");
    const off = { WARDEN_ACCESS_LOG: "false", WARDEN_GATEWAY_METRICS: "false" };
    const on = { WARDEN_ACCESS_LOG: "true", WARDEN_GATEWAY_METRICS: "true", OTEL_EXPORTER_OTLP_ENDPOINT: collector.url };
    const tracing = { ...off, OTEL_EXPORTER_OTLP_ENDPOINT: collector.url };
    const processes: Variant[] = [
      { name: "all off", env: off, logs: false, spansPerCall: 0 },
      // Two processes alike show how far apart the same settings measure: the noise of this table.
      { name: "all off (control process)", env: off, logs: false, spansPerCall: 0 },
      { name: "metrics only", env: { ...off, WARDEN_GATEWAY_METRICS: "true" }, logs: false, spansPerCall: 0 },
      { name: "access log only", env: { ...off, WARDEN_ACCESS_LOG: "true" }, logs: true, spansPerCall: 0 },
      { name: "tracing only", env: tracing, logs: false, spansPerCall: 1 },
      { name: "tracing only, one request in ten", env: { ...tracing, OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.1" }, logs: false, spansPerCall: 0.1 },
      { name: "all on", env: on, logs: true, spansPerCall: 1 },
      { name: "all on (control process)", env: on, logs: true, spansPerCall: 1 },
    ];
    const variants: (Variant & { child: BenchChild; target: Target; pool: Pool; url: string })[] = [];
    for (const p of processes) {
      const gateway = await h.startGateway(`gateway-${p.name.replace(/\W+/g, "-")}`, p.env);
      const target: Target = { name: p.name, origin: gateway.url, headers: { "content-type": "application/json", authorization: `Bearer ${configuration.key.secret}` } };
      variants.push({ ...p, child: gateway.child, target, pool: new Pool(gateway.url, { connections: plan.concurrency }), url: gateway.url });
    }
    h.defer(() => Promise.all(variants.map((v) => v.pool.destroy())));
    const body = requestBody(benchModel, false);
    const answerBytes = completeAnswer(benchModel).length;
    const call = (v: (typeof variants)[number]) => () => callOnce(v.pool, v.target, body, answerBytes);
    for (const v of variants) await guarded(waitUntilServed(`the gateway (${v.name})`, call(v)));
    if (cores) {
      h.pinGenerator();
      log(`gateway observability: pinned: load generator and provider on core ${cores.generator}, the gateways on core ${cores.middle}`);
    }

    const result = await guarded(
      (async (): Promise<ObservabilityBenchResult> => {
        log(`gateway observability: warm-up, ${plan.warmup} calls per variant at c=${plan.concurrency}`);
        await h.phase("warm-up", async () => {
          for (const v of variants) await closedLoop(plan.warmup, plan.concurrency, call(v));
        });
        log(`gateway observability: ${plan.calls} calls per variant at c=${plan.concurrency}, ${plan.rounds} rotated rounds`);
        const acc = new Map(variants.map((v) => [v.name, { requests: 0, seconds: 0, samples: [] as number[], rounds: [] as number[], cpu: 0, written: 0, sequential: [] as number[] }]));
        const parts = shares(plan.calls, plan.rounds);
        await h.phase(`c=${plan.concurrency}`, async () => {
          for (let round = 0; round < plan.rounds; round++) {
            for (const v of rotation(variants, round)) {
              const a = acc.get(v.name)!;
              const before = { cpu: cpuSecondsOf(v.child.pid), written: bytesWritten(v.child.pid) };
              const seconds = (await closedLoop(parts[round]!, plan.concurrency, timed(call(v), a.samples))) / 1000;
              a.cpu += cpuSecondsOf(v.child.pid) - before.cpu;
              a.written += bytesWritten(v.child.pid) - before.written;
              a.seconds += seconds;
              a.requests += parts[round]!;
              a.rounds.push(parts[round]! / seconds);
            }
          }
        });
        log(`gateway observability: ${plan.sequential} calls per variant at c=1, ${plan.rounds} rotated rounds`);
        const seqParts = shares(plan.sequential, plan.rounds);
        await h.phase("c=1", async () => {
          for (let round = 0; round < plan.rounds; round++) {
            for (const v of rotation(variants, round)) await closedLoop(seqParts[round]!, 1, timed(call(v), acc.get(v.name)!.sequential));
          }
        });
        log(`gateway observability: ${plan.sampled} calls per variant at c=${plan.concurrency}, their allocations sampled`);
        const allocations = new Map<VariantName, { bytes: number; sites: AllocationSite[] }>();
        await h.phase("allocation", async () => {
          for (const v of variants) {
            await v.child.ask({ type: "allocations-start" }, "allocations-started");
            await closedLoop(plan.sampled, plan.concurrency, call(v));
            const sampled = await v.child.ask({ type: "allocations-stop" }, "allocations");
            const perCall = (bytes: number) => bytes / plan.sampled;
            allocations.set(v.name, { bytes: perCall(sampled.bytes), sites: sampled.sites.map((site) => ({ site: site.site, bytes: perCall(site.bytes) })) });
          }
        });
        const spans = new Map<VariantName, number>();
        for (const v of variants) spans.set(v.name, await exportedSpans(v.url));
        const cells = variants.map((v): Cell => {
          const a = acc.get(v.name)!;
          return {
            spans: spans.get(v.name)!,
            variant: v.name,
            requests: a.requests,
            seconds: a.seconds,
            perSecond: a.requests / a.seconds,
            latency: latencyStats(a.samples),
            roundPerSecond: a.rounds,
            gatewayCpu: a.cpu,
            written: a.written,
            sequential: latencyStats(a.sequential),
            allocated: allocations.get(v.name)!.bytes,
            sites: allocations.get(v.name)!.sites,
          };
        });
        // The settings took: the processes with the access log on write a line per call more than the
        // one with all off, and those with tracing exported spans (a tenth of them when sampled so).
        const offCell = cells.find((c) => c.variant === "all off")!;
        for (const [i, c] of cells.entries()) {
          const v = variants[i]!;
          const extra = (c.written - offCell.written) / c.requests;
          if (v.logs && extra < cpu.lineBytes / 2) throw new Error(`${c.variant}: only ${extra.toFixed(0)} B per call more written than with all off: is the access log on?`);
          if (!v.logs && extra > cpu.lineBytes / 2 && v.spansPerCall === 0) throw new Error(`${c.variant}: ${extra.toFixed(0)} B per call more written than with all off: is the access log off?`);
          // Spans: two a call when every request is sampled; with sampling, a tenth of them give or take.
          if (v.spansPerCall === 1 && c.spans < c.requests) throw new Error(`${c.variant}: ${c.spans} spans exported for ${c.requests} calls: is tracing on?`);
          if (v.spansPerCall === 0 && c.spans !== 0) throw new Error(`${c.variant}: ${c.spans} spans exported: is tracing off?`);
          if (v.spansPerCall > 0 && v.spansPerCall < 1 && (c.spans === 0 || c.spans > c.requests)) throw new Error(`${c.variant}: ${c.spans} spans exported for ${c.requests} calls: is one request in ten sampled?`);
        }
        return {
          date,
          machine: machine(),
          database: h.database,
          source: sourceRevision(),
          nodeFlags: h.nodeFlags.join(" "),
          logLevel: h.logLevel,
          placement: cores
            ? `load generator (this process, with the idle management API) and fake provider pinned to core ${cores.generator}; the eight gateways pinned to core ${cores.middle} (one busy at a time); PostgreSQL unpinned`
            : "no pinning (taskset or a second core is missing): every process floats over all cores",
          plan:
            `in process: ${plan.cpuIterations} requests per case after ${plan.cpuWarmup} of warm-up, ${plan.cpuRounds} rotated rounds; ` +
            `end to end: per variant ${plan.warmup} warm-up calls at c=${plan.concurrency}, then ${plan.calls} calls at c=${plan.concurrency} in ${plan.rounds} rotated rounds, then ${plan.sequential} at c=1, ` +
            `then ${plan.sampled} at c=${plan.concurrency} with the allocation sampler on`,
          configuration: [
            ...configuration.description,
            "eight gateway processes on one database: all off (WARDEN_GATEWAY_METRICS and WARDEN_ACCESS_LOG false, no OTLP endpoint), twice; each of the three alone; tracing alone with OTEL_TRACES_SAMPLER=parentbased_traceidratio and OTEL_TRACES_SAMPLER_ARG=0.1; all on (both true and OTEL_EXPORTER_OTLP_ENDPOINT at a collector on loopback, the SDK's batch defaults, every request sampled); all on again (control); /metrics not scraped during the calls",
            "stdout (the access log) to /dev/null; the collector answers every export 200",
          ],
          payloads: `request ${body.length} B (POST /v1/responses), answer ${answerBytes} B`,
          concurrency: plan.concurrency,
          cpu,
          cells,
          load: h.load,
          wallSeconds: (performance.now() - started) / 1000,
        };
      })(),
    );
    log("gateway observability: stopping the children and removing the database");
    return observabilityMarkdown(result);
  });
}

function observabilityMarkdown(r: ObservabilityBenchResult): string {
  const lines: string[] = [];
  lines.push("# Warden benchmark: the cost of metrics, the access log and tracing in the gateway", "");
  lines.push(...setupLines(r, "the gateways"));
  lines.push(`- Plan: ${r.plan}`);
  lines.push(`- Gateway configuration: ${r.configuration.join("; ")}; log level ${r.logLevel}`);
  lines.push(`- Payloads: ${r.payloads}; one access-log line ${r.cpu.lineBytes} B`);
  lines.push(loadLine(r.load));
  lines.push(`- Wall time of this section: ${r.wallSeconds.toFixed(1)} s`, "");

  lines.push("## In process, µs per request", "");
  lines.push(
    `${r.cpu.iterations.toLocaleString("en")} requests per case after ${r.cpu.warmup.toLocaleString("en")} of warm-up, in ${r.cpu.rounds} rounds that rotate the cases, ` +
      "in batches of 64 with an event-loop turn between them. Wall: the loop's own time (mean; lowest and highest round). CPU: the process's, every thread (the asynchronous writes and exports included).",
    "",
    "| Case | wall µs | lowest round | highest round | CPU µs |",
    "|---|--:|--:|--:|--:|",
  );
  for (const c of [...r.cpu.metrics, ...r.cpu.log, ...r.cpu.tracing]) lines.push(`| ${c.name} | ${c.wall.toFixed(2)} | ${c.low.toFixed(2)} | ${c.high.toFixed(2)} | ${c.cpu.toFixed(2)} |`);
  const [none, recorded] = r.cpu.metrics;
  const [logOff, devNull, file] = r.cpu.log;
  const [noSpans, spans, sampled] = r.cpu.tracing;
  const metricsCpu = recorded!.cpu - none!.cpu;
  const logCpu = devNull!.cpu - logOff!.cpu;
  const tracingCpu = spans!.cpu - noSpans!.cpu;
  lines.push(
    "",
    `- Metrics: **${(recorded!.wall - none!.wall).toFixed(2)} µs** per request (CPU ${signed(metricsCpu)} µs). ` +
      `Access log: **${(devNull!.wall - logOff!.wall).toFixed(2)} µs** per line to /dev/null (CPU ${signed(logCpu)} µs), ${(file!.wall - logOff!.wall).toFixed(2)} µs to a file (CPU ${signed(file!.cpu - logOff!.cpu)} µs). ` +
      `Tracing: **${(spans!.wall - noSpans!.wall).toFixed(2)} µs** per request on the loop (CPU ${signed(tracingCpu)} µs, the batched export included); ` +
      `one request in ten sampled: ${(sampled!.wall - noSpans!.wall).toFixed(2)} µs (CPU ${signed(sampled!.cpu - noSpans!.cpu)} µs).`,
    "",
  );

  lines.push(`## End to end at c=${r.concurrency}`, "");
  lines.push(
    "Latency in ms. CPU and bytes written: the gateway process, per call (bytes written: every write(), the answers to the sockets, the log lines to stdout and the exports).",
    "",
    "| Gateway | req/s | vs all off | req/s per round (min–max) | p50 | p90 | p99 | p99 over all off | µs CPU per call | B written per call | spans exported | c=1 p50 | c=1 p99 | KB allocated per call |",
    "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
  );
  const off = r.cells.find((c) => c.variant === "all off")!;
  for (const c of r.cells) {
    lines.push(
      `| ${c.variant} | ${Math.round(c.perSecond)} | ${(c.perSecond / off.perSecond).toFixed(3)}× | ${Math.round(Math.min(...c.roundPerSecond))}–${Math.round(Math.max(...c.roundPerSecond))} | ` +
        `${ms(c.latency.p50)} | ${ms(c.latency.p90)} | ${ms(c.latency.p99)} | ${signed(c.latency.p99 - off.latency.p99)} | ${us(c.gatewayCpu, c.requests)} | ` +
        `${Math.round(c.written / c.requests)} | ${c.spans.toLocaleString("en")} | ${ms(c.sequential.p50)} | ${ms(c.sequential.p99)} | ${(c.allocated / 1000).toFixed(1)} |`,
    );
  }
  const on = r.cells.find((c) => c.variant === "all on")!;
  const control = r.cells.find((c) => c.variant === "all on (control process)")!;
  const cpuPerCall = (c: Cell): number => (c.gatewayCpu * 1e6) / c.requests;
  const cost = 1 - on.perSecond / off.perSecond;
  const controlCost = 1 - control.perSecond / off.perSecond;
  // The three together, in process, as a share of what the gateway spends per call with all off.
  const together = metricsCpu + logCpu + tracingCpu;
  const tenth = metricsCpu + logCpu + (sampled!.cpu - noSpans!.cpu);
  const share = together / cpuPerCall(off);
  lines.push(
    "",
    `- All three on cost **${(cost * 100).toFixed(1)}%** of the gateway's throughput end to end (control process: ${(controlCost * 100).toFixed(1)}%), ` +
      `${signed(cpuPerCall(on) - cpuPerCall(off))} µs of gateway CPU per call (control: ${signed(cpuPerCall(control) - cpuPerCall(off))} µs).`,
    `- Against all off (its twin, the control, shows the noise): ${r.cells
      .filter((c) => c !== off && c !== on && c !== control)
      .map((c) => `${c.variant} ${signed(cpuPerCall(c) - cpuPerCall(off))} µs of CPU per call, ${((1 - c.perSecond / off.perSecond) * 100).toFixed(1)}% of the throughput`)
      .join("; ")}.`,
    `- In process, metrics + access log + tracing: ${together.toFixed(2)} µs of CPU per request, ${(share * 100).toFixed(1)}% of the gateway's ${Math.round(cpuPerCall(off))} µs of CPU per call with all off ` +
      `(goal ≤ ${observabilityTarget * 100}% together: ${verdict(share <= observabilityTarget && cost <= observabilityTarget)}, judged on both figures).`,
    `- The same with one request in ten traced: ${tenth.toFixed(2)} µs of CPU per request, ${((tenth / cpuPerCall(off)) * 100).toFixed(1)}% ` +
      `(in process only: ${verdict(tenth / cpuPerCall(off) <= observabilityTarget)}).`,
  );
  // Where "all on" allocates more than "all off", site by site (the sampler's largest sites of each).
  const offSites = new Map(off.sites.map((site) => [site.site, site.bytes]));
  const more = on.sites
    .map((site) => ({ site: site.site, extra: (site.bytes - (offSites.get(site.site) ?? 0)) / 1000 }))
    .filter((site) => site.extra > 0.2)
    .map((site) => `\`${site.site}\` +${site.extra.toFixed(1)}`);
  lines.push(
    `- Allocated per call: all off ${(off.allocated / 1000).toFixed(1)} KB, all on ${(on.allocated / 1000).toFixed(1)} KB (control ${(control.allocated / 1000).toFixed(1)} KB). ` +
      `Where all on allocates more, of its largest sites, in KB per call: ${more.length > 0 ? more.join("; ") : "none"}.`,
  );
  return lines.join("\n") + "\n";
}
