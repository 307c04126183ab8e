import type { LatencyStats } from "../measure.ts";
import { loadLine, ms, setupLines, signed, us, verdict, type RunSetup } from "./report.ts";

/** The input guardrails the cost bench switches on together, in the gateway's order. */
export const guardrailKinds = ["pii", "prompt_injection", "content_safety"] as const;

export type LimitVariantName = "bare proxy" | "no limit" | "PostgreSQL counters" | "Redis counters" | "no limit, Redis gateway";

/** One prompt size with guardrails off or on, at c=1 through one gateway. */
export interface GuardrailCell {
  /** The size asked for; the text is within one sentence of it. */
  size: number;
  textBytes: number;
  requestBytes: number;
  guardrails: boolean;
  calls: number;
  latency: LatencyStats & { max: number };
  /** CPU seconds the gateway process used while these calls ran. */
  cpuSeconds: number;
  /** How long they took. */
  seconds: number;
}

export interface LimitRun {
  variant: LimitVariantName;
  /** The gateway process that served it. */
  process: string;
  /** At concurrency `concurrency`. */
  requests: number;
  seconds: number;
  perSecond: number;
  latency: LatencyStats;
  /** p99 of each round on its own. */
  roundP99s: number[];
  /** CPU seconds of the gateway process, and of everything outside the bench (PostgreSQL, Redis, …), during those requests. */
  gatewayCpu: number;
  otherCpu: number;
  /** Latency at c=1. */
  sequential: LatencyStats;
}

export interface CostsBenchResult extends RunSetup {
  logLevel: string;
  redis: string;
  plan: string;
  configuration: string[];
  payloads: string;
  concurrency: number;
  guardrails: GuardrailCell[];
  /** The gateway's CPU while it served nothing, in cores. */
  idleCores: number;
  limits: LimitRun[];
  load: { phase: string; seconds: number; otherCores: number }[];
  wallSeconds: number;
}

export const costTargets = {
  /** Added per request by all three input guardrails on a 1 KB prompt. */
  guardrail1KbMs: 1,
  /** Added p99 by the usage-limit step with counters in Redis. */
  redisAddedP99Ms: 0.3,
  /** Issue 14: throughput at c=64 with limits on, as a share of the bare proxy's. */
  limitedVsBareProxy: 0.7,
};

const kb = (bytes: number): string => `${Math.round(bytes / 1024)} KB`;

/** The figures as Markdown: setup, the guardrail table, the usage-limit tables, and the goals. */
export function costsMarkdown(r: CostsBenchResult): string {
  const lines: string[] = [];
  lines.push("# Warden benchmark: the cost of guardrails and usage limits in the gateway", "");
  lines.push(...setupLines(r, "both gateways"));
  lines.push(`- Redis: ${r.redis}`);
  lines.push(`- Plan: ${r.plan}`);
  lines.push(`- Gateway configuration: ${r.configuration.join("; ")}`);
  lines.push(`- Payloads: ${r.payloads}`);
  lines.push(`${loadLine(r.load)} (in the usage-limit phases, PostgreSQL and Redis serving the gateways count as other load)`);
  lines.push(`- Wall time of this section: ${r.wallSeconds.toFixed(1)} s`, "");

  lines.push("## Guardrail cost per request at c=1, ms", "");
  lines.push(
    "| Prompt | Input guardrails | calls | p50 | p90 | p99 | max | mean | µs CPU per call (gateway) |",
    "|---|---|--:|--:|--:|--:|--:|--:|--:|",
  );
  for (const g of r.guardrails) {
    lines.push(
      `| ${kb(g.size)} (${g.textBytes.toLocaleString("en")} B) | ${g.guardrails ? guardrailKinds.join(" + ") : "none"} | ${g.calls} | ` +
        `${ms(g.latency.p50)} | ${ms(g.latency.p90)} | ${ms(g.latency.p99)} | ${ms(g.latency.max)} | ${ms(g.latency.mean)} | ${us(g.cpuSeconds, g.calls)} |`,
    );
  }
  lines.push(
    "",
    `The CPU per call includes what the gateway spends while idle (its timers: ${(r.idleCores * 1000).toFixed(1)} ms per second, read over a quiet stretch before the rounds), ` +
      `which the slower cells carry over more wall time per call; at most ${Math.round(Math.max(...r.guardrails.map((g) => (r.idleCores * g.seconds * 1e6) / g.calls)))} µs per call here.`,
  );
  lines.push("", "| Prompt | added p50 | added p90 | added p99 | added mean | added µs CPU per call |", "|---|--:|--:|--:|--:|--:|");
  const added = new Map<number, { p50: number; p99: number; cpuMs: number }>();
  for (const size of [...new Set(r.guardrails.map((g) => g.size))]) {
    const off = r.guardrails.find((g) => g.size === size && !g.guardrails);
    const on = r.guardrails.find((g) => g.size === size && g.guardrails);
    if (!off || !on) continue;
    const cpuUs = (on.cpuSeconds / on.calls - off.cpuSeconds / off.calls) * 1e6;
    added.set(size, { p50: on.latency.p50 - off.latency.p50, p99: on.latency.p99 - off.latency.p99, cpuMs: cpuUs / 1000 });
    lines.push(
      `| ${kb(size)} | ${signed(on.latency.p50 - off.latency.p50)} | ${signed(on.latency.p90 - off.latency.p90)} | ${signed(on.latency.p99 - off.latency.p99)} | ` +
        `${signed(on.latency.mean - off.latency.mean)} | ${Math.round(cpuUs)} |`,
    );
  }
  const oneKb = added.get(1024);
  const target = costTargets.guardrail1KbMs;
  lines.push("");
  if (oneKb) {
    lines.push(
      `- Goal: all three input guardrails add ≤ ${target} ms per request at 1 KB. Added p50 **${signed(oneKb.p50)} ms** (${verdict(oneKb.p50 <= target)}); ` +
        `added CPU per call ${(oneKb.cpuMs).toFixed(2)} ms (${verdict(oneKb.cpuMs <= target)}); added p99 ${signed(oneKb.p99)} ms (${verdict(oneKb.p99 <= target)}).`,
    );
  }
  lines.push("");

  const base = r.limits.find((l) => l.variant === "no limit");
  const redisBase = r.limits.find((l) => l.variant === "no limit, Redis gateway");
  const proxy = r.limits.find((l) => l.variant === "bare proxy");
  const sameProcessBase = (l: LimitRun): LimitRun | undefined =>
    l.process === base?.process ? base : l.process === redisBase?.process ? redisBase : undefined;
  lines.push(`## Usage-limit step at c=${r.concurrency}`, "");
  lines.push(
    "Latency in ms. CPU outside the bench: every process on the machine but the bench's own, per call: PostgreSQL (request log, " +
      "counters, settled usage), Redis, and any other work that ran meanwhile.",
    "",
    "| Key's limit | Process | req/s | vs bare proxy | vs no limit | p50 | p90 | p99 | p99 per round (min–max) | p99 over no limit | p99 over no limit, same process | µs CPU per call: process | µs CPU per call: outside the bench |",
    "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
  );
  for (const l of r.limits) {
    const same = sameProcessBase(l);
    lines.push(
      `| ${l.variant} | ${l.process} | ${Math.round(l.perSecond)} | ${proxy ? (l.perSecond / proxy.perSecond).toFixed(2) : "—"}× | ${base ? (l.perSecond / base.perSecond).toFixed(2) : "—"}× | ` +
        `${ms(l.latency.p50)} | ${ms(l.latency.p90)} | ${ms(l.latency.p99)} | ${ms(Math.min(...l.roundP99s))}–${ms(Math.max(...l.roundP99s))} | ` +
        `${base ? signed(l.latency.p99 - base.latency.p99) : "—"} | ${same ? signed(l.latency.p99 - same.latency.p99) : "—"} | ` +
        `${us(l.gatewayCpu, l.requests)} | ${us(l.otherCpu, l.requests)} |`,
    );
  }
  lines.push("", "## Usage-limit step at c=1, ms", "");
  lines.push("| Key's limit | Process | calls | p50 | p90 | p99 | mean | p50 over no limit | p99 over no limit |", "|---|---|--:|--:|--:|--:|--:|--:|--:|");
  for (const l of r.limits) {
    lines.push(
      `| ${l.variant} | ${l.process} | ${l.sequential.count} | ${ms(l.sequential.p50)} | ${ms(l.sequential.p90)} | ${ms(l.sequential.p99)} | ${ms(l.sequential.mean)} | ` +
        `${base ? signed(l.sequential.p50 - base.sequential.p50) : "—"} | ${base ? signed(l.sequential.p99 - base.sequential.p99) : "—"} |`,
    );
  }
  lines.push("");
  const redisRun = r.limits.find((l) => l.variant === "Redis counters");
  const pgRun = r.limits.find((l) => l.variant === "PostgreSQL counters");
  const goal = costTargets.redisAddedP99Ms;
  if (proxy) {
    const share = (l: LimitRun | undefined) => (l ? l.perSecond / proxy.perSecond : Number.NaN);
    const floor = costTargets.limitedVsBareProxy;
    lines.push(
      `- Goal (issue 14): with limits on, ≥ ${floor}× the bare proxy's throughput at c=${r.concurrency}. ` +
        `PostgreSQL counters **${share(pgRun).toFixed(2)}×** (${verdict(share(pgRun) >= floor)}); ` +
        `Redis counters **${share(redisRun).toFixed(2)}×** (${redisRun ? verdict(share(redisRun) >= floor) : "not measured"}); ` +
        `no limit ${share(base).toFixed(2)}×.`,
    );
  }
  if (base && pgRun) {
    lines.push(`- PostgreSQL counters: p99 ${signed(pgRun.latency.p99 - base.latency.p99)} ms over no limit at c=${r.concurrency}, ${signed(pgRun.sequential.p99 - base.sequential.p99)} ms at c=1.`);
  }
  if (base && redisRun) {
    const addedP99 = redisRun.latency.p99 - base.latency.p99;
    const sameProcess = redisBase ? redisRun.latency.p99 - redisBase.latency.p99 : Number.NaN;
    lines.push(
      `- Goal: the usage-limit step with Redis counters adds ≤ ${goal} ms of p99. At c=${r.concurrency}: **${signed(addedP99)} ms** over no limit (${verdict(addedP99 <= goal)}); ` +
        `${signed(sameProcess)} ms over the key without a limit on the same gateway process (${verdict(sameProcess <= goal)}). ` +
        `At c=1: ${signed(redisRun.sequential.p99 - base.sequential.p99)} ms (${verdict(redisRun.sequential.p99 - base.sequential.p99 <= goal)}).`,
    );
  } else lines.push("- Goal (Redis): not measured: no Redis.");
  return lines.join("\n") + "\n";
}
