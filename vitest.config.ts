import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: "forks",
    // Two files at a time at least: vitest's default is one fewer than the cores, which is one on
    // a 2-core machine, and most of a file's time is spent waiting on the processes and the
    // database it talks to. On such a machine (2026-11-29) the suite took 609 s with one and
    // 415–437 s with two.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
