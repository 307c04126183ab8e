import os from "node:os";
import type { CodecCost, ResponseSizes } from "./codec-cost.ts";
import type { LatencyStats, Throughput } from "./measure.ts";

export interface DoorResult {
  door: string;
  latency: LatencyStats;
  throughput: Throughput;
}

export interface OperationResult {
  operation: string;
  /** What each door sends, for the reader. */
  requests: Record<string, string>;
  /** The door the others are compared with. */
  baseline: string;
  doors: DoorResult[];
}

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  node: string;
  platform: string;
}

export function machine(): Machine {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model.trim() ?? "unknown",
    cores: cpus.length,
    memoryGiB: os.totalmem() / 1024 ** 3,
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
  };
}

const ms = (x: number): string => x.toFixed(2);
const ratio = (x: number): string => `${x.toFixed(2)}×`;

/** The results as Markdown: the setup, one table, and the REST-vs-Connect reading of it. */
export function markdownReport(options: {
  date: Date;
  machine: Machine;
  database: string;
  plan: string;
  results: OperationResult[];
  /** The serialisation steps of one list answer, timed alone. */
  codec: { costs: CodecCost[]; sizes: ResponseSizes; iterations: number };
  wallSeconds: number;
}): string {
  const { date, results } = options;
  const m = options.machine;
  const lines: string[] = [];
  lines.push(`# Warden benchmark: REST facade vs Connect`, "");
  lines.push(`- Date: ${date.toISOString()}`);
  lines.push(`- Machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGiB.toFixed(1)} GiB RAM, ${m.platform}`);
  lines.push(`- Node: ${m.node}`);
  lines.push(`- Database: ${options.database}`);
  lines.push(`- Plan: ${options.plan}`);
  lines.push(`- Wall time: ${options.wallSeconds.toFixed(1)} s`, "");

  lines.push(
    "| Operation | Door | p50 ms (c=1) | p90 ms (c=1) | p99 ms (c=1) | mean ms (c=1) | req/s (c=16) | p50 vs Connect binary | req/s vs Connect binary |",
    "|---|---|--:|--:|--:|--:|--:|--:|--:|",
  );
  for (const result of results) {
    const base = result.doors.find((d) => d.door === result.baseline);
    for (const d of result.doors) {
      const p50Ratio = base ? ratio(d.latency.p50 / base.latency.p50) : "—";
      const rpsRatio = base ? ratio(d.throughput.perSecond / base.throughput.perSecond) : "—";
      lines.push(
        `| ${result.operation} | ${d.door} | ${ms(d.latency.p50)} | ${ms(d.latency.p90)} | ${ms(d.latency.p99)} | ${ms(d.latency.mean)} | ${Math.round(d.throughput.perSecond)} | ${p50Ratio} | ${rpsRatio} |`,
      );
    }
  }
  lines.push("");
  for (const result of results) {
    const base = result.doors.find((d) => d.door === result.baseline);
    const rest = result.doors.find((d) => d.door.startsWith("REST"));
    if (!base || !rest) continue;
    const extra = rest.latency.p50 - base.latency.p50;
    lines.push(
      `- ${result.operation}: REST ${extra >= 0 ? "adds" : "saves"} ${ms(Math.abs(extra))} ms at p50 ` +
        `(${ratio(rest.latency.p50 / base.latency.p50)}) and ${ratio(rest.throughput.perSecond / base.throughput.perSecond)} ` +
        `the throughput of ${result.baseline} at c=16.`,
    );
  }
  const { costs, sizes, iterations } = options.codec;
  lines.push(
    "",
    `Serialisation of one ListProjects answer (100 projects; bodies: ${sizes.binary} B binary (${sizes.binaryGzip} B gzipped), ` +
      `${sizes.protoJson} B proto JSON, ${sizes.rest} B REST JSON (${sizes.restGzip} B gzipped)), in process, mean of ${iterations} calls:`,
    "",
    "| Step | Paid by | µs |",
    "|---|---|--:|",
  );
  for (const cost of costs) lines.push(`| ${cost.step} | ${cost.paidBy} | ${Math.round(cost.microseconds)} |`);
  lines.push("", "Requests:");
  for (const result of results) {
    for (const [door, request] of Object.entries(result.requests)) lines.push(`- ${result.operation}, ${door}: \`${request}\``);
  }
  return lines.join("\n") + "\n";
}
