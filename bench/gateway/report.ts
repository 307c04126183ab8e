import type { LatencyStats } from "../measure.ts";
import { machine, type Machine } from "../report.ts";
import type { HeapFigures } from "./ipc.ts";

export type VariantName = "direct" | "bare proxy" | "gateway";

/** CPU seconds spent during a measurement, per process; `middle` is the proxy or the gateway. */
export interface CpuSeconds {
  generator: number;
  provider: number;
  middle: number | undefined;
}

/** When RSS is read. */
export type MemoryMoment =
  | "started"
  | "idleAfterWarmup"
  | "idleAfterWarmupLastResort"
  | "idleAfterLoad"
  | "idleAfterLoadLastResort"
  | "heldOpen"
  | "heldOpenAfterGc"
  | "afterRelease";

/**
 * The GC forced before each reading: "regular" is a full collection; "last-resort" also hands
 * V8's pool of free pages back to the OS, as V8 does only under memory pressure.
 */
export const gcBefore: Record<MemoryMoment, "none" | "regular" | "last-resort"> = {
  started: "regular",
  idleAfterWarmup: "regular",
  idleAfterWarmupLastResort: "last-resort",
  idleAfterLoad: "regular",
  idleAfterLoadLastResort: "last-resort",
  heldOpen: "none",
  heldOpenAfterGc: "regular",
  afterRelease: "regular",
};

const moments = (held: string): { moment: MemoryMoment; title: string }[] => [
  { moment: "started", title: "after start (GC)" },
  { moment: "idleAfterWarmup", title: "idle after warm-up (GC)" },
  { moment: "idleAfterWarmupLastResort", title: "same, after a last-resort GC" },
  { moment: "idleAfterLoad", title: "idle after all the load above (GC)" },
  { moment: "idleAfterLoadLastResort", title: "same, after a last-resort GC" },
  { moment: "heldOpen", title: `${held} streams open (no GC)` },
  { moment: "heldOpenAfterGc", title: `${held} streams open (GC)` },
  { moment: "afterRelease", title: "after they ended (GC)" },
];

export interface MemoryReading {
  /** VmRSS, bytes. */
  rss: number;
  /** V8's figures, when the reading followed a GC. */
  heap: HeapFigures | undefined;
}

export interface ProcessMemory {
  process: "gateway" | "bare proxy";
  readings: Partial<Record<MemoryMoment, MemoryReading>>;
  /** VmHWM at the end: the most it ever held. */
  peak: number;
  /** Seconds to open the held streams through it. */
  openSeconds: number;
}

export interface GatewayBenchResult extends RunSetup {
  /** The gateway's WARDEN_LOG_LEVEL. */
  logLevel: string;
  plan: string;
  configuration: string[];
  payloads: string;
  concurrency: number;
  rate: number;
  streamRate: number;
  held: number;
  throughput: { variant: VariantName; requests: number; seconds: number; perSecond: number; cpu: CpuSeconds }[];
  latency: { variant: VariantName; stats: LatencyStats & { max: number }; lateness: LatencyStats; rate: number }[];
  streaming: { variant: VariantName; firstByte: LatencyStats; total: LatencyStats; lateness: LatencyStats }[];
  memory: ProcessMemory[];
  /** The CPU other processes on the machine used during each phase, in cores (1 = one core's worth). */
  load: { phase: string; seconds: number; otherCores: number }[];
  /** Milliseconds per trial. */
  propagation: { disable: number[]; disableAfterAnswer: number[]; enable: number[]; patch: number[]; timeouts: number };
  wallSeconds: number;
}

export const targets = {
  throughputRatio: 0.7,
  p99OverheadMs: 1,
  idleMB: 100,
  heldMB: 250,
  propagationMs: 1000,
};

export const ms = (x: number): string => (Number.isFinite(x) ? x.toFixed(2) : "—");
const mb = (bytes: number): string => (Number.isFinite(bytes) ? (bytes / 1e6).toFixed(1) : "—");
/** Microseconds per call. */
export const us = (seconds: number, calls: number): string => (calls > 0 ? Math.round((seconds * 1e6) / calls).toString() : "—");
export const pct = (x: number): string => `${Math.round(x * 100)}%`;
export const signed = (x: number): string => `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(2)}`;
export const verdict = (met: boolean): string => (met ? "**met**" : "**missed**");

/** The machine in one line, for a section's header. */
export function describeMachine(): string {
  const m = machine();
  return `${m.cpu}, ${m.cores} cores, ${m.memoryGiB.toFixed(1)} GiB, ${m.platform}, Node ${m.node}`;
}

/** What every gateway section reports about its run, before its figures. */
export interface RunSetup {
  date: Date;
  machine: Machine;
  /** The commit the gateway was run from. */
  source: string;
  database: string;
  placement: string;
  /** BENCH_GATEWAY_NODE_FLAGS, given to the processes under test. */
  nodeFlags: string;
}

export function setupLines(r: RunSetup, nodeFlagsFor: string): string[] {
  const m = r.machine;
  const lines = [
    `- Date: ${r.date.toISOString()}`,
    `- Machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGiB.toFixed(1)} GiB RAM, ${m.platform}`,
    `- Node: ${m.node}`,
    `- Source: ${r.source}`,
    `- Database: ${r.database}`,
    `- Placement: ${r.placement}`,
  ];
  if (r.nodeFlags) lines.push(`- Extra Node flags for ${nodeFlagsFor} (BENCH_GATEWAY_NODE_FLAGS): \`${r.nodeFlags}\``);
  return lines;
}

/** The other load on the machine, per phase, for the report. */
export function loadLine(load: { phase: string; otherCores: number }[]): string {
  return (
    `- Other load on the machine (CPU used by processes outside the bench, in cores, per phase): ` +
    load.map((l) => `${l.phase} ${l.otherCores.toFixed(2)}`).join(", ")
  );
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.ceil(sorted.length / 2) - 1] : Number.NaN;
}

function find<T extends { variant: VariantName }>(rows: T[], variant: VariantName): T {
  const row = rows.find((r) => r.variant === variant);
  if (!row) throw new Error(`no figures for ${variant}`);
  return row;
}

/** The figures as Markdown: setup, one table per measurement, and the targets. */
export function gatewayMarkdown(r: GatewayBenchResult): string {
  const lines: string[] = [];
  lines.push("# Warden benchmark: model gateway", "");
  lines.push(...setupLines(r, "the bare proxy and the gateway"));
  lines.push(`- Plan: ${r.plan}`);
  lines.push(`- Gateway configuration: ${r.configuration.join("; ")}; log level ${r.logLevel}${r.logLevel === "info" ? " (one JSON line per request, to /dev/null)" : ""}`);
  lines.push(`- Payloads: ${r.payloads}`);
  lines.push(loadLine(r.load));
  lines.push(`- Wall time of this section: ${r.wallSeconds.toFixed(1)} s`, "");

  const tDirect = find(r.throughput, "direct");
  const tProxy = find(r.throughput, "bare proxy");
  const tGateway = find(r.throughput, "gateway");
  lines.push(`## Throughput at c=${r.concurrency}`, "");
  lines.push(
    "| Variant | req/s | vs direct | vs bare proxy | µs CPU per call: proxy/gateway | provider | load generator | core 0 busy (generator + provider) | core 1 busy (proxy/gateway) |",
    "|---|--:|--:|--:|--:|--:|--:|--:|--:|",
  );
  for (const t of r.throughput) {
    const middle = t.cpu.middle;
    lines.push(
      `| ${t.variant} | ${Math.round(t.perSecond)} | ${(t.perSecond / tDirect.perSecond).toFixed(2)}× | ${(t.perSecond / tProxy.perSecond).toFixed(2)}× | ` +
        `${middle === undefined ? "—" : us(middle, t.requests)} | ${us(t.cpu.provider, t.requests)} | ${us(t.cpu.generator, t.requests)} | ` +
        `${pct((t.cpu.generator + t.cpu.provider) / t.seconds)} | ${middle === undefined ? "—" : pct(middle / t.seconds)} |`,
    );
  }
  const ratio = tGateway.perSecond / tProxy.perSecond;
  const cpuRatio = (tProxy.cpu.middle ?? 0) / tProxy.requests / ((tGateway.cpu.middle ?? 0) / tGateway.requests);
  lines.push(
    "",
    `- Gateway / bare proxy: **${ratio.toFixed(2)}** (target ≥ ${targets.throughputRatio}: ${verdict(ratio >= targets.throughputRatio)}).`,
    `- CPU per call of the process under test: the gateway ${us(tGateway.cpu.middle ?? 0, tGateway.requests)} µs, the bare proxy ${us(tProxy.cpu.middle ?? 0, tProxy.requests)} µs: ` +
      `were each the only bottleneck, the ratio would be ${cpuRatio.toFixed(2)}.`,
    "",
  );

  const lDirect = find(r.latency, "direct");
  const lProxy = find(r.latency, "bare proxy");
  const lGateway = find(r.latency, "gateway");
  lines.push(`## Latency at ${r.rate.toLocaleString("en")} requests/s (open loop), ms`, "");
  lines.push(
    "| Variant | p50 | p90 | p99 | max | mean | rate achieved (lowest round) | send lateness p99 | p50 over direct | p99 over direct |",
    "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
  );
  for (const l of r.latency) {
    lines.push(
      `| ${l.variant} | ${ms(l.stats.p50)} | ${ms(l.stats.p90)} | ${ms(l.stats.p99)} | ${ms(l.stats.max)} | ${ms(l.stats.mean)} | ${Math.round(l.rate)}/s | ${ms(l.lateness.p99)} | ` +
        `${signed(l.stats.p50 - lDirect.stats.p50)} | ${signed(l.stats.p99 - lDirect.stats.p99)} |`,
    );
  }
  const overDirect = lGateway.stats.p99 - lDirect.stats.p99;
  const overProxy = lGateway.stats.p99 - lProxy.stats.p99;
  lines.push(
    "",
    `- Gateway p99 overhead vs direct: **${signed(overDirect)} ms** (target ≤ ${targets.p99OverheadMs} ms: ${verdict(overDirect <= targets.p99OverheadMs)}); ` +
      `vs the bare proxy: **${signed(overProxy)} ms** (${verdict(overProxy <= targets.p99OverheadMs)}).`,
    `- At p50: ${signed(lGateway.stats.p50 - lDirect.stats.p50)} ms vs direct, ${signed(lGateway.stats.p50 - lProxy.stats.p50)} ms vs the bare proxy.`,
    "",
  );

  const sDirect = find(r.streaming, "direct");
  lines.push(`## Streaming (20 events) at ${r.streamRate} streams/s (open loop), ms`, "");
  lines.push(
    "| Variant | first byte p50 | first byte p99 | total p50 | total p99 | first byte p50 over direct | total p99 over direct | send lateness p99 |",
    "|---|--:|--:|--:|--:|--:|--:|--:|",
  );
  for (const s of r.streaming) {
    lines.push(
      `| ${s.variant} | ${ms(s.firstByte.p50)} | ${ms(s.firstByte.p99)} | ${ms(s.total.p50)} | ${ms(s.total.p99)} | ` +
        `${signed(s.firstByte.p50 - sDirect.firstByte.p50)} | ${signed(s.total.p99 - sDirect.total.p99)} | ${ms(s.lateness.p99)} |`,
    );
  }
  lines.push("");

  lines.push("## Memory of the process under test, MB (10^6 bytes)", "");
  lines.push(
    "RSS is VmRSS; V8 is heap used / heap committed after the GC (process.memoryUsage()).",
    "",
    `| Moment | ${r.memory.map((x) => `${x.process}: RSS | ${x.process}: V8`).join(" | ")} |`,
    `|---|${r.memory.map(() => "--:|--:|").join("")}`,
  );
  for (const { moment, title } of moments(r.held.toLocaleString("en"))) {
    const cells = r.memory.map((x) => {
      const reading = x.readings[moment];
      const heap = reading?.heap;
      return `${mb(reading?.rss ?? Number.NaN)} | ${heap ? `${mb(heap.heapUsed)} / ${mb(heap.heapTotal)}` : "—"}`;
    });
    lines.push(`| ${title} | ${cells.join(" | ")} |`);
  }
  lines.push(`| peak (VmHWM) | ${r.memory.map((x) => `${mb(x.peak)} | `).join(" | ")} |`);
  lines.push(`| time to open the ${r.held.toLocaleString("en")} streams | ${r.memory.map((x) => `${x.openSeconds.toFixed(1)} s | `).join(" | ")} |`);
  const gw = r.memory.find((x) => x.process === "gateway")?.readings;
  const idle = gw?.idleAfterWarmup?.rss ?? Number.NaN;
  const held = gw?.heldOpen?.rss ?? Number.NaN;
  lines.push("");
  for (const x of r.memory) {
    const before = x.readings.idleAfterLoadLastResort;
    const open = x.readings.heldOpen;
    const openGc = x.readings.heldOpenAfterGc;
    if (!before || !open) continue;
    const kb = (bytes: number): string => (bytes / 1e3 / r.held).toFixed(1);
    lines.push(
      `- ${x.process}: the streams were opened right after the last-resort GC; they added ${kb(open.rss - before.rss)} kB of RSS per stream` +
        (openGc?.heap && before.heap ? ` (${kb(openGc.heap.heapUsed - before.heap.heapUsed)} kB of live V8 heap).` : "."),
    );
  }
  lines.push(
    `- Gateway idle after warm-up and GC: ${mb(idle)} MB (target ≤ ${targets.idleMB} MB: ${verdict(idle <= targets.idleMB * 1e6)}); ` +
      `with ${r.held.toLocaleString("en")} streams open: ${mb(held)} MB (target ≤ ${targets.heldMB} MB: ${verdict(held <= targets.heldMB * 1e6)}).`,
    "",
  );

  const p = r.propagation;
  const worstDisable = p.disable.length ? Math.max(...p.disable) : Number.NaN;
  const allIn = p.timeouts === 0 && worstDisable <= targets.propagationMs;
  lines.push("## Configuration propagation to a separate gateway process, ms", "");
  lines.push("| Change | trials | p50 | max |", "|---|--:|--:|--:|");
  const row = (name: string, values: number[]): string =>
    `| ${name} | ${values.length} | ${ms(median(values))} | ${ms(values.length ? Math.max(...values) : Number.NaN)} |`;
  lines.push(row("disable a key: PATCH sent → first 401 from the gateway", p.disable));
  lines.push(row("disable a key: PATCH answered → first 401", p.disableAfterAnswer));
  lines.push(row("enable it again: PATCH sent → first 200", p.enable));
  lines.push(row("the PATCH itself (round trip)", p.patch));
  lines.push(
    "",
    `- ${p.timeouts} trial(s) timed out. Worst disable → 401: ${ms(worstDisable)} ms (target ≤ ${targets.propagationMs} ms: ${verdict(allIn)}).`,
    "",
  );

  lines.push("## Targets", "", "| Target | Figure | Result |", "|---|--:|---|");
  lines.push(`| throughput gateway / bare proxy ≥ ${targets.throughputRatio} | ${ratio.toFixed(2)} | ${verdict(ratio >= targets.throughputRatio)} |`);
  lines.push(`| p99 overhead vs direct ≤ ${targets.p99OverheadMs} ms | ${signed(overDirect)} ms | ${verdict(overDirect <= targets.p99OverheadMs)} |`);
  lines.push(`| p99 overhead vs bare proxy ≤ ${targets.p99OverheadMs} ms | ${signed(overProxy)} ms | ${verdict(overProxy <= targets.p99OverheadMs)} |`);
  lines.push(`| idle RSS (after warm-up and GC) ≤ ${targets.idleMB} MB | ${mb(idle)} MB | ${verdict(idle <= targets.idleMB * 1e6)} |`);
  lines.push(`| RSS with ${r.held.toLocaleString("en")} streams ≤ ${targets.heldMB} MB | ${mb(held)} MB | ${verdict(held <= targets.heldMB * 1e6)} |`);
  lines.push(`| propagation ≤ ${targets.propagationMs} ms (every trial) | ${ms(worstDisable)} ms max | ${verdict(allIn)} |`);
  return lines.join("\n") + "\n";
}
