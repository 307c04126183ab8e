/**
 * What tracing costs the gateway: the same gateway process, the same requests, through a key bound
 * to an inference pipeline (every request becomes a row of it, written in batches off the request
 * path) and through a key bound to none, side by side in one run (`BENCH_ONLY=gateway-traffic`;
 * see docs/performance.md, "Tracing cost").
 *
 * Both keys go through one gateway process (`node src/main.ts gateway`, on core 1 when it can be
 * pinned), in rounds that alternate which key goes first; non-streamed requests at c=64, then
 * streamed ones (20 events, 12 text deltas, which the gateway assembles into the row's output). At
 * the end the bench waits until the pipeline holds one row per traced request, read back through
 * the management API, so that no row was dropped to make the figures.
 */
import { Pool } from "undici";
import { latencyStats, type LatencyStats } from "../measure.ts";
import { machine } from "../report.ts";
import { sourceRevision, waitUntilServed, withHarness } from "./harness.ts";
import { callOnce, closedLoop, rotation, shares, streamOnce, timed, type Target } from "./load.ts";
import { benchModel, byteLength, completeAnswer, requestBody, streamAnswer } from "./payloads.ts";
import { cpuSecondsOf, procAvailable } from "./processes.ts";
import { loadLine, ms, setupLines, signed, us, verdict, type RunSetup } from "./report.ts";
import type { GatewayBenchOptions } from "./run.ts";
import { addKey, configureGateway, expectStatus, type Admin } from "./setup.ts";

type TracingVariant = "tracing off" | "tracing on";
type Mode = "non-streamed" | "streamed";

interface Cell {
  variant: TracingVariant;
  mode: Mode;
  requests: number;
  seconds: number;
  perSecond: number;
  latency: LatencyStats;
  /** CPU seconds of the gateway process, and of everything outside the bench (PostgreSQL writing the rows), meanwhile. */
  gatewayCpu: number;
  otherCpu: number;
}

interface TrafficBenchResult extends RunSetup {
  logLevel: string;
  plan: string;
  configuration: string[];
  payloads: string;
  concurrency: number;
  cells: Cell[];
  rows: { expected: number; stored: number; drainSeconds: number };
  load: { phase: string; seconds: number; otherCores: number }[];
  wallSeconds: number;
}

/** Tracing may cost at most this share of the gateway's throughput. */
export const tracingTarget = 0.05;

export async function runGatewayTrafficBench(options: GatewayBenchOptions): Promise<string> {
  if (!procAvailable()) throw new Error("the tracing bench reads CPU time from /proc: it runs on Linux only");
  const { log } = options;
  const count = (n: number): number => Math.max(1, Math.round(n * options.scale));
  const plan = {
    concurrency: 64,
    warmup: count(3000),
    calls: count(24_000),
    streams: count(6000),
    rounds: 6,
    drainDeadlineMs: 120_000,
  };

  const started = performance.now();
  const date = new Date();
  return withHarness(log, async (h) => {
    const { admin, cores, guarded } = h;
    log("gateway traffic: starting the fake provider");
    const { url: providerUrl } = await h.startProvider();
    log("gateway traffic: configuring the gateway, an llm-base project and its pipeline, and a key bound to it");
    const configuration = await configureGateway(admin, providerUrl);
    const traced = await addKey(admin, "bench-traced");
    const pipelineId = await tracePipeline(admin);
    await expectStatus(admin, "PATCH", `/v1/gateway/keys/${traced.id}`, 200, { inferencePipelineId: pipelineId });

    log("gateway traffic: starting the gateway");
    const gateway = await h.startGateway("gateway");
    const variants = (
      [
        ["tracing off", configuration.key.secret],
        ["tracing on", traced.secret],
      ] as const
    ).map(([name, secret]) => {
      const target: Target = { name, origin: gateway.url, headers: { "content-type": "application/json", authorization: `Bearer ${secret}` } };
      return { name, target, pool: new Pool(gateway.url, { connections: plan.concurrency }) };
    });
    h.defer(() => Promise.all(variants.map((v) => v.pool.destroy())));

    const plain = { body: requestBody(benchModel, false), bytes: completeAnswer(benchModel).length };
    const streamed = { body: requestBody(benchModel, true), bytes: byteLength(streamAnswer(benchModel)) };
    const send = (v: (typeof variants)[number], mode: Mode) =>
      mode === "non-streamed"
        ? () => callOnce(v.pool, v.target, plain.body, plain.bytes)
        : async () => void (await streamOnce(v.pool, v.target, streamed.body, streamed.bytes));
    for (const v of variants) await guarded(waitUntilServed(`the gateway (${v.name})`, send(v, "non-streamed")));
    if (cores) {
      h.pinGenerator();
      log(`gateway traffic: pinned: load generator and provider on core ${cores.generator}, the gateway on core ${cores.middle}`);
    }

    // The call of waitUntilServed that succeeded is a row too.
    let tracedRequests = 1;
    const counted = (v: (typeof variants)[number], n: number) => {
      if (v.name === "tracing on") tracedRequests += n;
    };
    const result = await guarded(
      (async (): Promise<TrafficBenchResult> => {
        log(`gateway traffic: warm-up, ${plan.warmup} calls per variant and mode at c=${plan.concurrency}`);
        await h.phase("warm-up", async () => {
          for (const mode of ["non-streamed", "streamed"] as const) {
            for (const v of variants) {
              await closedLoop(plan.warmup, plan.concurrency, send(v, mode));
              counted(v, plan.warmup);
            }
          }
        });
        const cells: Cell[] = [];
        for (const mode of ["non-streamed", "streamed"] as const) {
          const total = mode === "non-streamed" ? plan.calls : plan.streams;
          log(`gateway traffic: ${mode}: ${total} calls per variant at c=${plan.concurrency}, ${plan.rounds} rounds`);
          const byVariant = new Map(variants.map((v) => [v.name, { requests: 0, seconds: 0, samples: [] as number[], gatewayCpu: 0, otherCpu: 0 }]));
          const parts = shares(total, plan.rounds);
          await h.phase(mode, async () => {
            for (let round = 0; round < plan.rounds; round++) {
              for (const v of rotation(variants, round)) {
                const cell = byVariant.get(v.name)!;
                const before = { gateway: cpuSecondsOf(gateway.child.pid), other: h.otherCpu() };
                cell.seconds += (await closedLoop(parts[round]!, plan.concurrency, timed(send(v, mode), cell.samples))) / 1000;
                cell.gatewayCpu += cpuSecondsOf(gateway.child.pid) - before.gateway;
                cell.otherCpu += h.otherCpu() - before.other;
                cell.requests += parts[round]!;
                counted(v, parts[round]!);
              }
            }
          });
          for (const v of variants) {
            const cell = byVariant.get(v.name)!;
            cells.push({
              variant: v.name,
              mode,
              requests: cell.requests,
              seconds: cell.seconds,
              perSecond: cell.requests / cell.seconds,
              latency: latencyStats(cell.samples),
              gatewayCpu: cell.gatewayCpu,
              otherCpu: cell.otherCpu,
            });
          }
        }

        log(`gateway traffic: waiting until the pipeline holds a row for each of the ${tracedRequests} traced requests`);
        const drainStart = performance.now();
        const stored = await waitForRows(admin, pipelineId, tracedRequests, plan.drainDeadlineMs);
        return {
          date,
          machine: machine(),
          database: h.database,
          source: sourceRevision(),
          nodeFlags: h.nodeFlags.join(" "),
          logLevel: h.logLevel,
          placement: cores
            ? `load generator (this process, with the idle management API) and fake provider pinned to core ${cores.generator}; the gateway pinned to core ${cores.middle}; PostgreSQL unpinned`
            : "no pinning (taskset or a second core is missing): every process floats over all cores",
          plan:
            `per variant and mode, ${plan.warmup} warm-up calls, then ${plan.calls} non-streamed and ${plan.streams} streamed calls at c=${plan.concurrency}, ` +
            `in ${plan.rounds} rounds that alternate which variant goes first; both variants through the same gateway process`,
          configuration: [
            ...configuration.description,
            `tracing on: a second key with the same allow list, bound to an inference pipeline of an llm-base project (every request a row, written in batches of up to 1,000)`,
          ],
          payloads: `requests ${plain.body.length} B (streamed ${streamed.body.length} B); answers ${plain.bytes} B, or 20 events (${streamed.bytes} B) with 12 text deltas`,
          concurrency: plan.concurrency,
          cells,
          rows: { expected: tracedRequests, stored, drainSeconds: (performance.now() - drainStart) / 1000 },
          load: h.load,
          wallSeconds: (performance.now() - started) / 1000,
        };
      })(),
    );
    log("gateway traffic: stopping the children and removing the database");
    return trafficMarkdown(result);
  });
}

async function tracePipeline(admin: Admin): Promise<string> {
  const project = await expectStatus(admin, "POST", "/v1/projects", 201, { name: "bench-gateway-traffic", taskType: "llm-base" });
  const pipeline = await expectStatus(admin, "POST", `/v1/projects/${String(project.id)}/inference-pipelines`, 200, {
    name: "gateway traffic",
    description: "Every request of the traced bench key",
  });
  return String(pipeline.id);
}

/** Polls the pipeline's row count until it reaches `expected`; the count then. */
async function waitForRows(admin: Admin, pipelineId: string, expected: number, deadlineMs: number): Promise<number> {
  const deadline = performance.now() + deadlineMs;
  let stored = 0;
  for (;;) {
    const res = await admin.call("GET", `/v1/inference-pipelines/${pipelineId}`);
    stored = Number((res.body as { totalRecordsCount?: unknown }).totalRecordsCount ?? 0);
    if (stored >= expected) return stored;
    if (performance.now() > deadline) throw new Error(`the pipeline holds ${stored} rows after ${deadlineMs} ms; expected ${expected}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function trafficMarkdown(r: TrafficBenchResult): string {
  const lines: string[] = [];
  lines.push("# Warden benchmark: the cost of tracing gateway traffic to an inference pipeline", "");
  lines.push(...setupLines(r, "the gateway"));
  lines.push(`- Plan: ${r.plan}`);
  lines.push(`- Gateway configuration: ${r.configuration.join("; ")}; log level ${r.logLevel}`);
  lines.push(`- Payloads: ${r.payloads}`);
  lines.push(`${loadLine(r.load)} (PostgreSQL writing the rows counts as other load)`);
  lines.push(
    `- Rows: ${r.rows.stored.toLocaleString("en")} stored for ${r.rows.expected.toLocaleString("en")} traced requests, ` +
      `all in the pipeline ${r.rows.drainSeconds.toFixed(1)} s after the last call`,
  );
  lines.push(`- Wall time of this section: ${r.wallSeconds.toFixed(1)} s`, "");
  lines.push(`## Throughput and latency at c=${r.concurrency}`, "");
  lines.push(
    "Latency in ms. CPU outside the bench: every process on the machine but the bench's own, per call (mostly PostgreSQL: the request log, and with tracing on, the rows).",
    "",
    "| Requests | Key | req/s | vs tracing off | p50 | p90 | p99 | p99 over tracing off | µs CPU per call: gateway | µs CPU per call: outside the bench |",
    "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|",
  );
  const goals: string[] = [];
  for (const mode of ["non-streamed", "streamed"] as const) {
    const off = r.cells.find((c) => c.mode === mode && c.variant === "tracing off");
    const on = r.cells.find((c) => c.mode === mode && c.variant === "tracing on");
    if (!off || !on) continue;
    for (const c of [off, on]) {
      lines.push(
        `| ${mode} | ${c.variant} | ${Math.round(c.perSecond)} | ${(c.perSecond / off.perSecond).toFixed(3)}× | ${ms(c.latency.p50)} | ${ms(c.latency.p90)} | ${ms(c.latency.p99)} | ` +
          `${signed(c.latency.p99 - off.latency.p99)} | ${us(c.gatewayCpu, c.requests)} | ${us(c.otherCpu, c.requests)} |`,
      );
    }
    const cost = 1 - on.perSecond / off.perSecond;
    const cpuCost = on.gatewayCpu / on.requests / (off.gatewayCpu / off.requests) - 1;
    goals.push(
      `- ${mode}: tracing costs **${(cost * 100).toFixed(1)}%** of the gateway's throughput (goal ≤ ${tracingTarget * 100}%: ${verdict(cost <= tracingTarget)}); ` +
        `the gateway's CPU per call is ${(cpuCost * 100).toFixed(1)}% higher with it.`,
    );
  }
  lines.push("", ...goals);
  return lines.join("\n") + "\n";
}
