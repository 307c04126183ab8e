/**
 * Lets the bench ask a child process for a full garbage collection before it reads the child's
 * RSS: on {type: "gc"} over the IPC channel, collect (twice, so that finalisers' garbage goes
 * too) and answer {type: "gc-done"} with V8's heap figures. Needs `--expose-gc`. The gateway process gets it with
 * `--import`, in front of an unchanged `src/main.ts gateway`; the bench's own children import it.
 */
import { isToChild, tell } from "./ipc.ts";

process.on("message", (message: unknown) => {
  if (!isToChild(message) || message.type !== "gc") return;
  if (!globalThis.gc) throw new Error("gc-hook needs node --expose-gc");
  for (let i = 0; i < 2; i++) globalThis.gc({ type: "major", execution: "sync", flavor: message.flavor });
  const { heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
  tell({ type: "gc-done", heapUsed, heapTotal, external, arrayBuffers });
});
