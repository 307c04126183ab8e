/**
 * The tail at 1,000 requests/s with every check on, and what V8's helper threads do to it
 * (`BENCH_ONLY=gateway-tails`; docs/performance.md, "Every check on", Tails). Side by side in one
 * run, on the core under test, one carrying traffic at a time:
 *
 * - the bare proxy (bare-proxy.ts), the floor;
 * - the gateway with everything on (the six guardrails, limits on key, user and group counted in
 *   PostgreSQL) and V8's helper pool sized to the cores it may run on (`--v8-pool-size=0`, as
 *   `npm run gateway` and the Docker image start it);
 * - the same gateway with Node's default pool of four helper threads.
 *
 * Each gets the short prompt, non-streamed, at 1,000 requests/s (open loop) in rounds that rotate
 * the order. The report has the percentiles up to p99.9, the calls over 20 ms, the gateway's CPU
 * per call, its full collections, and its scavenges with what they promoted (counted by
 * gc-hook.ts). Then, in a window of its own, what the bare proxy and the gateway allocate per
 * call, and where (V8's sampler, through gc-hook.ts): the young generation's collections, and
 * what they promote, follow from it. A full collection's concurrent
 * marking runs on the helper threads; pinned to one core, four of them take the core from the
 * event loop while they mark, and the requests that arrive meanwhile wait.
 */
import { Pool } from "undici";
import { latencyStats } from "../measure.ts";
import { here, sourceRevision, waitUntilReady, waitUntilServed, withHarness } from "./harness.ts";
import { callOnce, closedLoop, openLoop, rotation, shares, type Target } from "./load.ts";
import { completeAnswer, requestBody, variedModel } from "./payloads.ts";
import type { AllocationSite } from "./ipc.ts";
import { cpuSecondsOf, procAvailable, type BenchChild } from "./processes.ts";
import { describeMachine, ms, signed, verdict } from "./report.ts";
import type { GatewayBenchOptions } from "./run.ts";
import { addLimitedKey, configureGateway, expectStatus, gatewayCapacity, providerApiKey } from "./setup.ts";

/** Issue 14's goal for the tail with everything on, ms over the bare proxy (as in checks.ts). */
const goalAddedP99Ms = 2;

/** Over this, a call waited for something other than its own work: the report counts them. */
const slowMs = 20;

interface Variant {
  name: string;
  flags: string;
  child: BenchChild;
  pool: Pool;
  target: Target;
  latencies: number[];
  /** What the process allocated over the sampled window's calls, and where. */
  allocation?: { calls: number; bytes: number; sites: AllocationSite[] };
  cpuSeconds: number;
  fullCollections: number;
  pauseMs: number;
  scavenges: number;
  scavengePauseMs: number;
  promotedBytes: number;
}

export async function runGatewayTailsBench(options: GatewayBenchOptions): Promise<string> {
  if (!procAvailable()) throw new Error("the gateway tails bench reads CPU time from /proc: it runs on Linux only");
  const { log } = options;
  const count = (n: number): number => Math.max(1, Math.round(n * options.scale));
  const plan = { rate: 1000, rounds: 4, calls: count(20_000), warmup: count(4000), sampled: count(3000), tokenLimit: 1_000_000_000_000 };
  const started = performance.now();
  const date = new Date();

  return withHarness(log, async (h) => {
    const provider = await h.startProvider();
    log("gateway tails: configuring: a key with limits on it, its user and its group; six guardrails, on");
    await configureGateway(h.admin, provider.url);
    const limited = await addLimitedKey(h.admin, "tails-limit", plan.tokenLimit);
    for (const kind of ["pii", "prompt_injection", "content_safety"]) {
      for (const stage of ["input", "output"]) await expectStatus(h.admin, "POST", "/v1/gateway/guardrails", 201, { kind, stage, enabled: true });
    }

    // Both gateways get the flags under test with only the pool size changed.
    const base = h.nodeFlags.filter((flag) => !flag.startsWith("--v8-pool-size"));
    const sized = [...base, "--v8-pool-size=0"];
    log("gateway tails: starting the bare proxy and two gateways (helper pool sized to the cores; Node's default of 4)");
    const proxy = h.start("bare proxy", ["--expose-gc", ...h.nodeFlags, here("bare-proxy.ts")], h.cores?.middle, {
      ...process.env,
      BENCH_UPSTREAM: provider.url,
      BENCH_CONNECTIONS: String(gatewayCapacity),
    });
    const proxyUrl = `http://127.0.0.1:${(await h.guarded(proxy.next("ready"))).port}`;
    const sizedGateway = await h.startGateway("gateway-pool-sized", {}, sized);
    const defaultGateway = await h.startGateway("gateway-pool-default", {}, base);

    const variant = (name: string, flags: string[], child: BenchChild, origin: string, secret: string): Variant => {
      const pool = new Pool(origin, { connections: 64 });
      h.defer(() => pool.destroy());
      const headers = { "content-type": "application/json", authorization: `Bearer ${secret}` };
      return { name, flags: flags.join(" ") || "none", child, pool, target: { name, origin, headers }, latencies: [], cpuSeconds: 0, fullCollections: 0, pauseMs: 0, scavenges: 0, scavengePauseMs: 0, promotedBytes: 0 };
    };
    const variants = [
      variant("bare proxy", h.nodeFlags, proxy, proxyUrl, providerApiKey),
      variant("gateway, helper pool sized to its cores", sized, sizedGateway.child, sizedGateway.url, limited.secret),
      variant("gateway, Node's default helper pool (4)", base, defaultGateway.child, defaultGateway.url, limited.secret),
    ];

    const answerBytes = completeAnswer(variedModel).length;
    let sequence = 1;
    const bodies = (n: number): Buffer[] => Array.from({ length: n }, () => requestBody(variedModel, false, `Say hello in one short sentence. (${sequence++})`));
    for (const [name, v] of [["gateway-pool-sized", variants[1]!], ["gateway-pool-default", variants[2]!]] as const) {
      await h.guarded(waitUntilServed(name, () => callOnce(v.pool, v.target, bodies(1)[0]!, answerBytes)));
      await h.guarded(waitUntilReady(name, v.target.origin));
    }
    if (h.cores) h.pinGenerator();

    log(`gateway tails: warm-up, ${plan.warmup} calls each at c=16`);
    await h.phase("warm-up", async () => {
      for (const v of variants) {
        const batch = bodies(plan.warmup);
        let next = 0;
        await h.guarded(closedLoop(batch.length, 16, () => callOnce(v.pool, v.target, batch[next++]!, answerBytes)));
      }
    });

    log(`gateway tails: ${plan.calls} calls each at ${plan.rate}/s, ${plan.rounds} rounds`);
    await h.phase("latency", async () => {
      for (let round = 0; round < plan.rounds; round++) {
        for (const v of rotation(variants, round)) {
          const batch = bodies(shares(plan.calls, plan.rounds)[round]!);
          let next = 0;
          const before = { cpu: cpuSecondsOf(v.child.pid), gc: await h.guarded(v.child.ask({ type: "gc-count" }, "gc-counted")) };
          const run = await h.guarded(
            openLoop(plan.rate, batch.length, async () => {
              const body = batch[next++]!;
              const start = performance.now();
              await callOnce(v.pool, v.target, body, answerBytes);
              return performance.now() - start;
            }),
          );
          const after = await h.guarded(v.child.ask({ type: "gc-count" }, "gc-counted"));
          v.cpuSeconds += cpuSecondsOf(v.child.pid) - before.cpu;
          v.fullCollections += after.fullCollections - before.gc.fullCollections;
          v.pauseMs += after.pauseMs - before.gc.pauseMs;
          v.scavenges += after.scavenges - before.gc.scavenges;
          v.scavengePauseMs += after.scavengePauseMs - before.gc.scavengePauseMs;
          v.promotedBytes += after.promotedBytes - before.gc.promotedBytes;
          v.latencies.push(...run.results);
        }
      }
    });

    log(`gateway tails: allocation, ${plan.sampled} calls at ${plan.rate}/s through the bare proxy and the gateway, sampled`);
    await h.phase("allocation", async () => {
      for (const v of variants.slice(0, 2)) {
        const batch = bodies(plan.sampled);
        let next = 0;
        await h.guarded(v.child.ask({ type: "allocations-start" }, "allocations-started"));
        await h.guarded(openLoop(plan.rate, batch.length, () => callOnce(v.pool, v.target, batch[next++]!, answerBytes)));
        const sampled = await h.guarded(v.child.ask({ type: "allocations-stop" }, "allocations"));
        v.allocation = { calls: batch.length, bytes: sampled.bytes, sites: sampled.sites };
      }
    });

    const minutes = ((performance.now() - started) / 60_000).toFixed(1);
    return tailsMarkdown(variants, [
      `Date: ${date.toISOString()}; machine: ${describeMachine()}; source: ${sourceRevision()}; ${minutes} min; ` +
        `pinned: ${h.cores ? `bare proxy and gateways on core ${h.cores.middle}, load generator and provider on core ${h.cores.generator}` : "no"}; ` +
        `log level ${h.logLevel}; ${h.database}.`,
      `Other load on the machine (cores busy outside the bench): ${h.load.map((l) => `${l.phase} ${l.otherCores.toFixed(2)}`).join(", ")}.`,
    ]);
  });
}

function tailsMarkdown(variants: Variant[], header: string[]): string {
  const lines = ["## Tails at 1,000 requests/s, everything on", "", ...header, ""];
  lines.push(
    "| variant | Node flags | calls | p50 | p90 | p99 | p99.9 | max | calls over 20 ms | added p99 over the bare proxy | µs CPU per call | full collections | their pauses, ms | scavenges | their pauses, ms | promoted, KB per call |",
    "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
  );
  const floor = latencyStats(variants[0]!.latencies);
  for (const v of variants) {
    const s = latencyStats(v.latencies);
    const sorted = [...v.latencies].sort((a, b) => a - b);
    const p999 = sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.999))]!;
    const slow = v.latencies.filter((l) => l > slowMs).length;
    const added = v === variants[0] ? "—" : signed(s.p99 - floor.p99);
    const cpu = Math.round((v.cpuSeconds / v.latencies.length) * 1e6);
    lines.push(
      `| ${v.name} | \`${v.flags}\` | ${s.count} | ${ms(s.p50)} | ${ms(s.p90)} | ${ms(s.p99)} | ${ms(p999)} | ${ms(sorted.at(-1)!)} | ${slow} | ${added} | ${cpu} | ${v.fullCollections} | ${v.pauseMs.toFixed(0)} | ${v.scavenges} | ${v.scavengePauseMs.toFixed(0)} | ${(v.promotedBytes / v.latencies.length / 1000).toFixed(1)} |`,
    );
  }
  for (const v of variants) {
    if (!v.allocation) continue;
    const { calls, bytes, sites } = v.allocation;
    lines.push(
      "",
      `### Allocation per call: ${v.name}`,
      "",
      `${(bytes / calls / 1000).toFixed(1)} KB per call over ${calls} calls of the short prompt at 1,000 requests/s (V8's sampling heap profiler: everything allocated, collected since or not). Where, the most first:`,
      "",
      "| where | bytes per call |",
      "|---|--:|",
      ...sites.slice(0, 12).map((site) => `| \`${site.site}\` | ${Math.round(site.bytes / calls)} |`),
    );
  }
  lines.push("");
  for (const v of variants.slice(1)) {
    const added = latencyStats(v.latencies).p99 - floor.p99;
    lines.push(`- Goal: ${v.name}, added p99 ≤ ${goalAddedP99Ms} ms over the bare proxy: ${signed(added)} (${verdict(added <= goalAddedP99Ms)}).`);
  }
  lines.push("");
  return lines.join("\n");
}
