/**
 * Instructions per request of a request's spans (`npm run bench:tracing-instructions`;
 * docs/performance.md, "Observability cost"): the in-process case of observability.ts
 * (`requestSpans`, exported in batches to a collector in the process), counted by valgrind's
 * callgrind under `node --predictable` (V8's compilers and collector on the main thread). This
 * machine's timings of the same code move by a factor of two between runs; two counts of one
 * build agreed within 200 instructions a request with every request traced (of about 90,000), and
 * within 1,600 (5 %) with one in ten, whose exports depend on when the collector answers. A
 * change of a few per cent reads in the first, of ten per cent or more in the second.
 *
 * Each case runs twice, N1 and N2 requests, in processes of their own; their difference divided by
 * N2 − N1 is a request's instructions, start-up, warm-up and compilation left out. Cases: every
 * request traced (`parentbased_always_on`) and one in ten (`parentbased_traceidratio` 0.1).
 * Argument: another checkout to measure the same way (a `git worktree` of the commit before a
 * change), beside this one. Needs valgrind.
 */
import { execFileSync, spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { pino } from "pino";
import { Registry } from "prom-client";
import type { SamplerName } from "../../src/platform/sampling.ts";
import { benchTracingSettings, requestSpans, startCollector } from "./observability.ts";

const self = fileURLToPath(import.meta.url);
const here = path.resolve(path.dirname(self), "../..");
const N1 = 20_000;
const N2 = 60_000;
const cases: Record<string, { sampler: SamplerName; ratio: number }> = {
  "every request traced": { sampler: "parentbased_always_on", ratio: 1 },
  "one request in ten traced": { sampler: "parentbased_traceidratio", ratio: 0.1 },
};

/** In a child: `count` requests' spans through `root`'s Tracing, exported, then flushed. */
async function child(root: string, name: string, count: number): Promise<void> {
  const { Tracing } = (await import(pathToFileURL(path.join(root, "src/platform/tracing.ts")).href)) as typeof import("../../src/platform/tracing.ts");
  const collector = await startCollector();
  const { sampler, ratio } = cases[name]!;
  const tracing = new Tracing({ ...benchTracingSettings(collector.url), sampler, samplerRatio: ratio }, new Registry(), pino({ level: "silent" }));
  const spans = requestSpans(tracing);
  for (let i = 0; i < count; i++) {
    spans(i);
    // A turn of the event loop every 64 requests, as the in-process case has it: exports go out.
    if ((i & 63) === 63) await new Promise((resolve) => setImmediate(resolve));
  }
  await tracing.forceFlush();
  await tracing.shutdown();
  await collector.close();
}

/** Instructions of one child process, as callgrind counts them. */
function instructions(root: string, name: string, count: number): number {
  const run = spawnSync(
    "valgrind",
    ["--tool=callgrind", "--callgrind-out-file=/dev/null", process.execPath, "--predictable", self, "--child", root, name, String(count)],
    { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
  );
  const collected = /Collected : (\d+)/.exec(run.stderr);
  if (run.status !== 0 || !collected) throw new Error(`callgrind run failed (${name}, ${count}):\n${run.stderr.slice(-2000)}`);
  return Number(collected[1]);
}

if (process.argv[2] === "--child") {
  await child(process.argv[3]!, process.argv[4]!, Number(process.argv[5]));
} else {
  execFileSync("valgrind", ["--version"], { stdio: "ignore" });
  const roots = [here, ...process.argv.slice(2).map((root) => path.resolve(root))];
  console.log(`| checkout | ${Object.keys(cases).join(" | ")} |`);
  console.log(`|---|${Object.keys(cases).map(() => "--:").join("|")}|`);
  for (const root of roots) {
    const perRequest = Object.keys(cases).map((name) => Math.round((instructions(root, name, N2) - instructions(root, name, N1)) / (N2 - N1)));
    console.log(`| ${root === here ? "this checkout" : root} | ${perRequest.map((n) => n.toLocaleString("en")).join(" | ")} |`);
  }
  console.log(`\nInstructions per request: callgrind under node --predictable, ${N2.toLocaleString("en")} requests against ${N1.toLocaleString("en")}, each in a process of its own.`);
}
