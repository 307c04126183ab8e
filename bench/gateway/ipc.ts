/** The messages between the bench and its child processes (over Node's IPC channel). */
/**
 * "gc": a full collection, twice; "last-resort" also gives back to the OS what V8 keeps for
 * reuse (its pool of free heap pages), as V8 does before it would run out of memory.
 */
export type ToChild = { type: "gc"; flavor: "regular" | "last-resort" } | { type: "release" } | { type: "gc-count" };
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
  /** Full collections (mark-compact) since the first "gc-count", and their pauses in all, ms. */
  | { type: "gc-counted"; fullCollections: number; pauseMs: number };

export function isToChild(value: unknown): value is ToChild {
  return typeof value === "object" && value !== null && "type" in value && (value.type === "gc" || value.type === "release" || value.type === "gc-count");
}

export function isFromChild(value: unknown): value is FromChild {
  if (typeof value !== "object" || value === null || !("type" in value)) return false;
  return value.type === "ready" || value.type === "gc-done" || value.type === "released" || value.type === "gc-counted";
}

export function tell(message: FromChild): void {
  process.send?.(message);
}
