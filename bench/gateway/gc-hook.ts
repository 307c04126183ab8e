/**
 * Lets the bench ask a child process for a full garbage collection before it reads the child's
 * RSS: on {type: "gc"} over the IPC channel, collect (twice, so that finalisers' garbage goes
 * too) and answer {type: "gc-done"} with V8's heap figures. Needs `--expose-gc`. The gateway process gets it with
 * `--import`, in front of an unchanged `src/main.ts gateway`; the bench's own children import it.
 *
 * On {type: "gc-count"} it answers how many full collections and scavenges the process has run
 * since the first such request (which starts the count, so that other sections pay nothing for
 * it), their pauses, and what the scavenges promoted to the old generation. Between
 * {type: "allocations-start"} and {type: "allocations-stop"} V8's sampling heap profiler records
 * every allocation, collected since or not: the answer has their bytes and where they were made.
 */
import { Session } from "node:inspector/promises";
import { GCProfiler, type HeapSpaceStatistics } from "node:v8";
import { isToChild, tell, type AllocationSite, type GcCounts } from "./ipc.ts";

/** Collections since the first "gc-count", from V8's GC profiler (restarted at every count, as it is read only by stopping it). */
let profiler: GCProfiler | undefined;
const counted: GcCounts = { fullCollections: 0, pauseMs: 0, scavenges: 0, scavengePauseMs: 0, promotedBytes: 0 };

/** Old-generation bytes in use: what a scavenge's promotion adds to. */
function oldBytes(spaces: readonly HeapSpaceStatistics[]): number {
  let bytes = 0;
  for (const space of spaces) if (space.spaceName === "old_space" || space.spaceName === "large_object_space") bytes += space.spaceUsedSize;
  return bytes;
}

function countCollections(): GcCounts {
  if (profiler) {
    for (const gc of profiler.stop().statistics) {
      if (gc.gcType === "MarkSweepCompact") {
        counted.fullCollections += 1;
        counted.pauseMs += gc.cost / 1000;
      } else if (gc.gcType === "Scavenge") {
        counted.scavenges += 1;
        counted.scavengePauseMs += gc.cost / 1000;
        counted.promotedBytes += oldBytes(gc.afterGC.heapSpaceStatistics) - oldBytes(gc.beforeGC.heapSpaceStatistics);
      }
    }
  }
  profiler = new GCProfiler();
  profiler.start();
  return { ...counted };
}
let sampler: Session | undefined;

/** A node of V8's sampled allocation profile (HeapProfiler.SamplingHeapProfileNode). */
interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

async function startSampling(): Promise<void> {
  sampler = new Session();
  sampler.connect();
  await sampler.post("HeapProfiler.enable");
  // One sample per 4 KiB on average; the profile scales the samples to estimated bytes.
  await sampler.post("HeapProfiler.startSampling", { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  tell({ type: "allocations-started" });
}

async function stopSampling(): Promise<void> {
  if (!sampler) throw new Error("gc-hook: allocations-stop before allocations-start");
  const { profile } = (await sampler.post("HeapProfiler.stopSampling")) as { profile: { head: ProfileNode } };
  sampler.disconnect();
  sampler = undefined;
  const bySite = new Map<string, number>();
  let bytes = 0;
  const visit = (node: ProfileNode): void => {
    if (node.selfSize > 0) {
      const { functionName, url, lineNumber } = node.callFrame;
      const site = `${functionName || "(anonymous)"} ${url.replace(/^.*\/(src|node_modules)\//, "$1/")}:${lineNumber + 1}`;
      bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
      bytes += node.selfSize;
    }
    for (const child of node.children) visit(child);
  };
  visit(profile.head);
  const sites: AllocationSite[] = [...bySite].map(([site, b]) => ({ site, bytes: b })).sort((a, b) => b.bytes - a.bytes);
  tell({ type: "allocations", bytes, sites: sites.slice(0, 15) });
}

process.on("message", (message: unknown) => {
  if (!isToChild(message)) return;
  if (message.type === "allocations-start") return void startSampling();
  if (message.type === "allocations-stop") return void stopSampling();
  if (message.type === "gc-count") {
    tell({ type: "gc-counted", ...countCollections() });
    return;
  }
  if (message.type !== "gc") return;
  if (!globalThis.gc) throw new Error("gc-hook needs node --expose-gc");
  for (let i = 0; i < 2; i++) globalThis.gc({ type: "major", execution: "sync", flavor: message.flavor });
  const { heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
  tell({ type: "gc-done", heapUsed, heapTotal, external, arrayBuffers });
});
