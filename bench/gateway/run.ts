/**
 * The model gateway against a bare pass-through proxy and against calling the provider directly,
 * side by side in one run. See docs/performance.md ("Model gateway") for the method.
 *
 * Processes: this one (the load generator, and the management API that configures the gateway,
 * idle while the load runs), the fake provider, the bare proxy and the gateway (`node
 * src/main.ts gateway`), each a child process. On a machine with two cores and taskset, the load
 * generator and the provider share core 0, and the process under test (bare proxy or gateway)
 * has core 1 to itself; direct calls use core 0 only.
 */
import { Pool } from "undici";
import { latencyStats } from "../measure.ts";
import { machine } from "../report.ts";
import { here, sourceRevision, waitUntilServed, withHarness } from "./harness.ts";
import {
  callOnce,
  closedLoop,
  openHeldStreams,
  openLoop,
  rotation,
  shares,
  statusOf,
  streamOnce,
  type HeldStreams,
  type StreamTiming,
  type Target,
} from "./load.ts";
import { benchModel, byteLength, completeAnswer, holdModel, requestBody, streamAnswer, streamEventCount } from "./payloads.ts";
import { cpuSecondsOf, memoryOf, procAvailable, type BenchChild } from "./processes.ts";
import {
  gatewayMarkdown,
  type CpuSeconds,
  type GatewayBenchResult,
  gcBefore,
  type MemoryMoment,
  type ProcessMemory,
  type VariantName,
} from "./report.ts";
import { configureGateway, gatewayCapacity, providerApiKey, type Admin } from "./setup.ts";

export interface GatewayBenchOptions {
  /** Scales every request count (BENCH_SCALE). */
  scale: number;
  log: (message: string) => void;
}

interface Variant {
  name: VariantName;
  target: Target;
  /** The process between the load generator and the provider, if any. */
  middle: BenchChild | undefined;
  pool: Pool;
}

export async function runGatewayBench(options: GatewayBenchOptions): Promise<string> {
  if (!procAvailable()) throw new Error("the gateway bench reads RSS and CPU time from /proc: it runs on Linux only");
  const { log } = options;
  const count = (n: number): number => Math.max(1, Math.round(n * options.scale));
  const plan = {
    concurrency: 64,
    warmup: count(4000),
    warmupStreams: count(400),
    throughput: count(24_000),
    throughputRounds: 4,
    rate: 1000,
    latency: count(6000),
    latencyRounds: 6,
    streamRate: 300,
    streams: count(1500),
    streamRounds: 6,
    held: 2000,
    heldBatch: 100,
    propagationTrials: 20,
    propagationDeadlineMs: 5000,
  };

  const started = performance.now();
  const date = new Date();
  return withHarness(log, async (h) => {
    const { admin, cores, guarded, nodeFlags, logLevel, phase } = h;
    log("gateway: starting the fake provider");
    const { child: provider, url: providerUrl } = await h.startProvider();

    log("gateway: configuring the gateway through the management API");
    const configuration = await configureGateway(admin, providerUrl);

    log("gateway: starting the bare proxy and `node src/main.ts gateway`");
    // Node flags for both processes under test: by default those of `npm run gateway`, so that both
    // run as deployed; BENCH_GATEWAY_NODE_FLAGS replaces them for experiments (--cpu-prof, …).
    const proxy = h.start("bare proxy", ["--expose-gc", ...nodeFlags, here("bare-proxy.ts")], cores?.middle, {
      ...process.env,
      BENCH_UPSTREAM: providerUrl,
      BENCH_CONNECTIONS: String(gatewayCapacity),
    });
    // As deployed, at info. BENCH_GATEWAY_LOG_LEVEL=debug adds a log line per request.
    const { child: gateway, url: gatewayUrl } = await h.startGateway("gateway");
    const proxyUrl = `http://127.0.0.1:${(await guarded(proxy.next("ready"))).port}`;

    const json = { "content-type": "application/json" };
    const variants: Variant[] = [
      { name: "direct", middle: undefined, target: { name: "direct", origin: providerUrl, headers: { ...json, authorization: `Bearer ${providerApiKey}` } } },
      { name: "bare proxy", middle: proxy, target: { name: "bare proxy", origin: proxyUrl, headers: { ...json, authorization: `Bearer ${providerApiKey}` } } },
      { name: "gateway", middle: gateway, target: { name: "gateway", origin: gatewayUrl, headers: { ...json, authorization: `Bearer ${configuration.key.secret}` } } },
    ].map((v) => ({ ...v, name: v.name as VariantName, pool: new Pool(v.target.origin, { connections: plan.concurrency }) }));
    h.defer(() => Promise.all(variants.map((v) => v.pool.destroy())));

    const body = requestBody(benchModel, false);
    const streamBody = requestBody(benchModel, true);
    const completeBytes = completeAnswer(benchModel).length;
    const streamBytes = byteLength(streamAnswer(benchModel));
    const call = (v: Variant) => () => callOnce(v.pool, v.target, body, completeBytes);
    const stream = (v: Variant) => (): Promise<StreamTiming> => streamOnce(v.pool, v.target, streamBody, streamBytes);

    log("gateway: waiting for the gateway to answer");
    await guarded(waitUntilServed(variants[2].name, call(variants[2])));

    if (cores) {
      h.pinGenerator();
      log(`gateway: pinned: load generator and provider on core ${cores.generator}, proxy and gateway on core ${cores.middle}`);
    }

    const memory = new Map<"gateway" | "bare proxy", ProcessMemory>([
      ["gateway", { process: "gateway", readings: {}, peak: Number.NaN, openSeconds: Number.NaN }],
      ["bare proxy", { process: "bare proxy", readings: {}, peak: Number.NaN, openSeconds: Number.NaN }],
    ]);
    const measured = [{ child: gateway, name: "gateway" as const }, { child: proxy, name: "bare proxy" as const }];
    /** RSS after a forced GC of the given flavour (or as it is), with V8's figures when it collected. */
    const readMemory = async (child: BenchChild, name: "gateway" | "bare proxy", moment: MemoryMoment): Promise<void> => {
      const flavor = gcBefore[moment];
      const heap = flavor === "none" ? undefined : await guarded(child.ask({ type: "gc", flavor }, "gc-done"));
      const entry = memory.get(name);
      if (entry) entry.readings[moment] = { rss: memoryOf(child.pid).rss, heap };
    };
    const readAll = async (...moments: MemoryMoment[]): Promise<void> => {
      for (const { child, name } of measured) for (const moment of moments) await readMemory(child, name, moment);
    };
    await readAll("started");

    const work = async (): Promise<GatewayBenchResult> => {
      log(`gateway: warm-up, ${plan.warmup} calls at c=${plan.concurrency} and ${plan.warmupStreams} streams at c=16 per variant`);
      await phase("warm-up", async () => {
        for (const v of variants) {
          await closedLoop(plan.warmup, plan.concurrency, call(v));
          await closedLoop(plan.warmupStreams, 16, stream(v));
        }
      });
      await readAll("idleAfterWarmup", "idleAfterWarmupLastResort");

      log(`gateway: throughput, ${plan.throughput} calls per variant at c=${plan.concurrency}, ${plan.throughputRounds} rounds`);
      const throughput = new Map<VariantName, { requests: number; ms: number; cpu: CpuSeconds }>(
        variants.map((v) => [v.name, { requests: 0, ms: 0, cpu: { generator: 0, provider: 0, middle: v.middle ? 0 : undefined } }]),
      );
      const parts = shares(plan.throughput, plan.throughputRounds);
      await phase("throughput", async () => {
        for (let round = 0; round < plan.throughputRounds; round++) {
          for (const v of rotation(variants, round)) {
            const before = cpuOf(provider, v.middle);
            const ms = await closedLoop(parts[round], plan.concurrency, call(v));
            const after = cpuOf(provider, v.middle);
            const total = throughput.get(v.name);
            if (!total) continue;
            total.requests += parts[round];
            total.ms += ms;
            total.cpu.generator += after.generator - before.generator;
            total.cpu.provider += after.provider - before.provider;
            if (total.cpu.middle !== undefined) total.cpu.middle += (after.middle ?? 0) - (before.middle ?? 0);
          }
        }
      });

      log(`gateway: latency, ${plan.latency} calls per variant sent at ${plan.rate}/s (open loop), ${plan.latencyRounds} rounds`);
      const latency = new Map<VariantName, { samples: number[]; lateness: number[]; rates: number[] }>(
        variants.map((v) => [v.name, { samples: [], lateness: [], rates: [] }]),
      );
      const latencyParts = shares(plan.latency, plan.latencyRounds);
      await phase("latency", async () => {
        for (let round = 0; round < plan.latencyRounds; round++) {
          for (const v of rotation(variants, round)) {
            const fire = call(v);
            const run = await openLoop(plan.rate, latencyParts[round], async () => {
              const t = performance.now();
              await fire();
              return performance.now() - t;
            });
            const into = latency.get(v.name);
            into?.samples.push(...run.results);
            into?.lateness.push(...run.lateness);
            into?.rates.push(run.rate);
          }
        }
      });

      log(`gateway: streaming, ${plan.streams} streams of ${streamEventCount} events per variant at ${plan.streamRate}/s, ${plan.streamRounds} rounds`);
      const streaming = new Map<VariantName, { timings: StreamTiming[]; lateness: number[] }>(variants.map((v) => [v.name, { timings: [], lateness: [] }]));
      const streamParts = shares(plan.streams, plan.streamRounds);
      await phase("streaming", async () => {
        for (let round = 0; round < plan.streamRounds; round++) {
          for (const v of rotation(variants, round)) {
            const run = await openLoop(plan.streamRate, streamParts[round], stream(v));
            const into = streaming.get(v.name);
            into?.timings.push(...run.results);
            into?.lateness.push(...run.lateness);
          }
        }
      });
      await readAll("idleAfterLoad", "idleAfterLoadLastResort");

      const holdBody = requestBody(holdModel, true);
      const holdBytes = byteLength(streamAnswer(holdModel));
      for (const { child, name } of measured) {
        const v = variants.find((x) => x.middle === child);
        const entry = memory.get(name);
        if (!v || !entry) continue;
        log(`gateway: ${plan.held} streams held open at once through the ${name}`);
        await phase(`${plan.held} streams (${name})`, async () => {
          const opening = performance.now();
          let held: HeldStreams | undefined;
          try {
            held = await guarded(openHeldStreams(v.target, holdBody, plan.held, plan.heldBatch, holdBytes));
            entry.openSeconds = (performance.now() - opening) / 1000;
            await readMemory(child, name, "heldOpen");
            await readMemory(child, name, "heldOpenAfterGc");
            const released = await guarded(provider.ask({ type: "release" }, "released"));
            if (released.count !== plan.held) throw new Error(`the provider held ${released.count} streams, expected ${plan.held}`);
            await guarded(held.finished);
          } finally {
            await held?.close();
          }
          await readMemory(child, name, "afterRelease");
          entry.peak = memoryOf(child.pid).peak;
        });
      }

      log(`gateway: configuration propagation, ${plan.propagationTrials} trials (disable a key, then enable it)`);
      const propagation = await phase("propagation", () =>
        measurePropagation(admin, variants[2], configuration.propagationKey, plan.propagationTrials, plan.propagationDeadlineMs),
      );

      return {
        date,
        machine: machine(),
        database: h.database,
        source: sourceRevision(),
        nodeFlags: nodeFlags.join(" "),
        logLevel,
        placement: cores
          ? `load generator (this process, with the idle management API) and fake provider pinned to core ${cores.generator}; the bare proxy and the gateway pinned to core ${cores.middle} (one of them busy at a time); PostgreSQL unpinned`
          : "no pinning (taskset or a second core is missing): every process floats over all cores",
        plan:
          `per variant: warm-up ${plan.warmup} calls at c=${plan.concurrency} + ${plan.warmupStreams} streams at c=16; ` +
          `throughput ${plan.throughput} calls at c=${plan.concurrency} in ${plan.throughputRounds} interleaved rounds; ` +
          `latency ${plan.latency} calls sent at ${plan.rate}/s (open loop) in ${plan.latencyRounds} rounds; ` +
          `streaming ${plan.streams} streams of ${streamEventCount} events sent at ${plan.streamRate}/s in ${plan.streamRounds} rounds; ` +
          `${plan.held} streams held open at once (opened ${plan.heldBatch} at a time); ${plan.propagationTrials} propagation trials`,
        configuration: configuration.description,
        payloads: `request ${body.length} B (stream: ${streamBody.length} B); answer ${completeBytes} B; stream ${streamEventCount} events, ${streamBytes} B`,
        concurrency: plan.concurrency,
        rate: plan.rate,
        streamRate: plan.streamRate,
        held: plan.held,
        throughput: variants.map((v) => {
          const t = throughput.get(v.name) ?? { requests: 0, ms: Number.NaN, cpu: { generator: 0, provider: 0, middle: undefined } };
          return { variant: v.name, requests: t.requests, seconds: t.ms / 1000, perSecond: (t.requests * 1000) / t.ms, cpu: t.cpu };
        }),
        latency: variants.map((v) => {
          const l = latency.get(v.name) ?? { samples: [], lateness: [], rates: [] };
          return {
            variant: v.name,
            stats: { ...latencyStats(l.samples), max: Math.max(...l.samples) },
            lateness: latencyStats(l.lateness),
            rate: Math.min(...l.rates),
          };
        }),
        streaming: variants.map((v) => {
          const s = streaming.get(v.name) ?? { timings: [], lateness: [] };
          return {
            variant: v.name,
            firstByte: latencyStats(s.timings.map((t) => t.firstByte)),
            total: latencyStats(s.timings.map((t) => t.total)),
            lateness: latencyStats(s.lateness),
          };
        }),
        memory: [...memory.values()],
        load: h.load,
        propagation,
        wallSeconds: 0,
      };
    };
    const result = await guarded(work());
    result.wallSeconds = (performance.now() - started) / 1000;
    log("gateway: stopping the children and removing the database");
    return gatewayMarkdown(result);
  });
}

function cpuOf(provider: BenchChild, middle: BenchChild | undefined): { generator: number; provider: number; middle: number | undefined } {
  return {
    generator: cpuSecondsOf(process.pid),
    provider: cpuSecondsOf(provider.pid),
    middle: middle ? cpuSecondsOf(middle.pid) : undefined,
  };
}

/**
 * Disables the key through the REST API and, from the moment the PATCH is sent, calls the
 * gateway back to back with that key until it answers 401; then enables it and waits for a 200
 * the same way. Every wait is bounded.
 */
async function measurePropagation(
  admin: Admin,
  gateway: Variant,
  key: { id: string; secret: string },
  trials: number,
  deadlineMs: number,
): Promise<GatewayBenchResult["propagation"]> {
  const target = { ...gateway.target, headers: { ...gateway.target.headers, authorization: `Bearer ${key.secret}` } };
  const body = requestBody(benchModel, false);
  const statusNow = (): Promise<number> => statusOf(gateway.pool, target, body);
  const result: GatewayBenchResult["propagation"] = { disable: [], disableAfterAnswer: [], enable: [], patch: [], timeouts: 0 };
  const change = async (disabled: boolean, want: number): Promise<{ fromSend: number; fromAnswer: number; patch: number } | undefined> => {
    const sent = performance.now();
    let answered = Number.NaN;
    const patch = admin.call("PATCH", `/v1/gateway/keys/${key.id}`, { disabled }).then((res) => {
      answered = performance.now();
      if (res.status !== 200) throw new Error(`PATCH /v1/gateway/keys: ${res.status} ${JSON.stringify(res.body)}`);
    });
    patch.catch(() => undefined);
    let seen = Number.NaN;
    while (performance.now() - sent < deadlineMs) {
      if ((await statusNow()) === want) {
        seen = performance.now();
        break;
      }
    }
    await patch;
    if (Number.isNaN(seen)) return undefined;
    return { fromSend: seen - sent, fromAnswer: seen - answered, patch: answered - sent };
  };
  if ((await statusNow()) !== 200) throw new Error("the propagation key is not served before the trials");
  for (let i = 0; i < trials; i++) {
    const off = await change(true, 401);
    if (off) {
      result.disable.push(off.fromSend);
      result.disableAfterAnswer.push(off.fromAnswer);
      result.patch.push(off.patch);
    } else result.timeouts++;
    const on = await change(false, 200);
    if (on) result.enable.push(on.fromSend);
    else result.timeouts++;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return result;
}
