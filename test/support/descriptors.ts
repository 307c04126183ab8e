import { readdirSync, readlinkSync } from "node:fs";

/**
 * This process's file descriptors open on a path that ends with `suffix` (Linux: /proc/self/fd).
 * The test app runs in the test's process, so this sees the files the app holds open.
 */
export function descriptorsOn(suffix: string): string[] {
  return readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).endsWith(suffix);
    } catch {
      return false; // closed meanwhile
    }
  });
}
