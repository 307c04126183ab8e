/**
 * Lets the bench ask a child process for a full garbage collection before it reads the child's
 * RSS: on {type: "gc"} over the IPC channel, collect (twice, so that finalisers' garbage goes
 * too) and answer {type: "gc-done"} with V8's heap figures. Needs `--expose-gc`. The gateway process gets it with
 * `--import`, in front of an unchanged `src/main.ts gateway`; the bench's own children import it.
 *
 * On {type: "gc-count"} it answers how many full collections the process has run since the first
 * such request (which starts the count, so that other sections pay nothing for it).
 */
import { constants, PerformanceObserver, type PerformanceEntry } from "node:perf_hooks";
import { isToChild, tell } from "./ipc.ts";

let full: { collections: number; pauseMs: number } | undefined;

process.on("message", (message: unknown) => {
  if (!isToChild(message)) return;
  if (message.type === "gc-count") {
    if (!full) {
      const counted = { collections: 0, pauseMs: 0 };
      new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) {
          // A "gc" entry's detail says which collection it was.
          const { detail } = entry as PerformanceEntry & { detail?: { kind?: number } };
          if (detail?.kind !== constants.NODE_PERFORMANCE_GC_MAJOR) continue;
          counted.collections += 1;
          counted.pauseMs += entry.duration;
        }
      }).observe({ entryTypes: ["gc"] });
      full = counted;
    }
    tell({ type: "gc-counted", fullCollections: full.collections, pauseMs: full.pauseMs });
    return;
  }
  if (message.type !== "gc") return;
  if (!globalThis.gc) throw new Error("gc-hook needs node --expose-gc");
  for (let i = 0; i < 2; i++) globalThis.gc({ type: "major", execution: "sync", flavor: message.flavor });
  const { heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
  tell({ type: "gc-done", heapUsed, heapTotal, external, arrayBuffers });
});
