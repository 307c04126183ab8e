/**
 * The in-process cost of the guardrail detectors, shared by scripts/bench-guardrails.ts and
 * scripts/eval-guardrails.ts. A request runs PII, prompt injection and content safety on the same
 * text, as a gateway input check with all three guardrails on would.
 */
import { availableParallelism, cpus, loadavg } from "node:os";
import { loadContentSafety } from "../src/gateway/guardrails/detectors/content-safety.ts";
import { loadInjection } from "../src/gateway/guardrails/detectors/injection.ts";
import { loadPii } from "../src/gateway/guardrails/detectors/pii.ts";
import { davidsonRows, injectionRows, moderationRows, piiRows, safetyPromptRows } from "./guardrail-data.ts";

export type Check = [name: string, run: (text: string) => unknown];

/** The three detectors, and all three together. */
export async function checks(): Promise<Check[]> {
  const [pii, injection, content] = await Promise.all([loadPii(), loadInjection(), loadContentSafety()]);
  const each: Check[] = [
    ["pii", (t) => pii.detect(t)],
    ["injection", (t) => injection.score(t)],
    ["content", (t) => content.score(t)],
  ];
  return [["all three", (t) => each.forEach(([, run]) => run(t))], ...each];
}

/** Every development text, each file in its order: the evaluation texts. */
export function evaluationTexts(): string[] {
  return [
    ...injectionRows().map((r) => r.text),
    ...moderationRows().map((r) => r.text),
    ...safetyPromptRows().map((r) => r.text),
    ...piiRows().map((r) => r.text),
    ...davidsonRows().map((r) => r.text),
  ];
}

/** The evaluation texts joined by line breaks and cut into requests of `size` UTF-16 units. */
export function chunks(texts: readonly string[], size: number, limit: number): string[] {
  const joined = texts.join("\n");
  const out: string[] = [];
  // Spread over the whole corpus, so that every file is in the sample.
  const stride = Math.max(size, Math.floor((joined.length - size) / limit));
  for (let at = 0; at + size <= joined.length && out.length < limit; at += stride) out.push(joined.slice(at, at + size));
  return out;
}

export interface Timing {
  p50: number;
  p99: number;
  mean: number;
  max: number;
}

function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
}

function summary(values: number[]): Timing {
  const sorted = values.sort((a, b) => a - b);
  return {
    p50: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
    mean: sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length),
    max: sorted[sorted.length - 1] ?? 0,
  };
}

/**
 * Milliseconds per call of `run` on each text (or per KB of it), after a warm-up pass over the
 * first texts: elapsed time, and the process's CPU time. On a machine shared with other work the
 * elapsed time includes the time the process waited for a core; the CPU time does not.
 */
export function time(run: (text: string) => unknown, texts: readonly string[], perKb = false): { wall: Timing; cpu: Timing } {
  for (const text of texts.slice(0, 200)) run(text);
  const wall: number[] = [];
  const cpu: number[] = [];
  for (const text of texts) {
    const cpuStart = process.cpuUsage();
    const start = performance.now();
    run(text);
    const elapsed = performance.now() - start;
    const used = process.cpuUsage(cpuStart);
    const per = perKb ? Math.max(1, Buffer.byteLength(text)) / 1024 : 1;
    wall.push(elapsed / per);
    cpu.push((used.user + used.system) / 1000 / per);
  }
  return { wall: summary(wall), cpu: summary(cpu) };
}

/** Node version, CPU model and count, load average: how loaded the machine was during a run. */
export function machine(): string {
  const cpu = cpus()[0]?.model.trim() ?? "unknown CPU";
  const load = loadavg().map((l) => l.toFixed(1)).join(", ");
  return `Node ${process.version}, ${availableParallelism()} × ${cpu}, load average ${load} (1, 5, 15 min), ${new Date().toISOString().slice(0, 10)}`;
}

export const ms = (x: number): string => `${x.toFixed(3)} ms`;
