/** The messages between the bench and its child processes (over Node's IPC channel). */
/**
 * "gc": a full collection, twice; "last-resort" also gives back to the OS what V8 keeps for
 * reuse (its pool of free heap pages), as V8 does before it would run out of memory.
 * "gc-count": the full collections so far (gc-hook.ts). "allocations-start" and "-stop": V8's
 * allocation sampler over the time between them (gc-hook.ts).
 */
export type ToChild =
  | { type: "gc"; flavor: "regular" | "last-resort" }
  | { type: "release" }
  | { type: "gc-count" }
  | { type: "allocations-start" }
  | { type: "allocations-stop" };

/** Bytes allocated at one place in the code (a function, by file and line), as V8's sampler estimates them. */
export interface AllocationSite {
  site: string;
  bytes: number;
}

/** Collections since the first "gc-count" (gc-hook.ts). */
export interface GcCounts {
  /** Full collections (mark-compact), and their pauses in all, ms. */
  fullCollections: number;
  pauseMs: number;
  /** Scavenges of the young generation, their pauses in all (ms), and the bytes they promoted to the old one. */
  scavenges: number;
  scavengePauseMs: number;
  promotedBytes: number;
}

/** V8's view of a process's memory, in bytes (process.memoryUsage()). */
export interface HeapFigures {
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
}

export type FromChild =
  | { type: "ready"; port: number }
  | ({ type: "gc-done" } & HeapFigures)
  | { type: "released"; count: number }
  | ({ type: "gc-counted" } & GcCounts)
  | { type: "allocations-started" }
  /** Everything allocated between start and stop, collected since or not, and where, the most first. */
  | { type: "allocations"; bytes: number; sites: AllocationSite[] };

export function isToChild(value: unknown): value is ToChild {
  return typeof value === "object" && value !== null && "type" in value && ["gc", "release", "gc-count", "allocations-start", "allocations-stop"].includes(String(value.type));
}

export function isFromChild(value: unknown): value is FromChild {
  if (typeof value !== "object" || value === null || !("type" in value)) return false;
  return ["ready", "gc-done", "released", "gc-counted", "allocations-started", "allocations"].includes(String(value.type));
}

export function tell(message: FromChild): void {
  process.send?.(message);
}
