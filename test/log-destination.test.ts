import { execFile } from "node:child_process";
import { mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { BatchedDestination } from "../src/platform/logger.ts";
import { until } from "./support/wait.ts";

/**
 * The log's destination: lines gathered and written in batches, in order, byte for byte; what is
 * waiting is written within the flush interval, on `flushSync`, on `end`, and when the process
 * exits.
 */

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempFile(): { file: string; fd: number } {
  const dir = mkdtempSync(path.join(tmpdir(), "warden-log-"));
  dirs.push(dir);
  const file = path.join(dir, "out.log");
  return { file, fd: openSync(file, "w") };
}

describe("BatchedDestination", () => {
  it("writes short lines in order within the flush interval, without being asked", async () => {
    const { file, fd } = tempFile();
    const destination = new BatchedDestination(fd);
    try {
      destination.write('{"n":1}\n');
      destination.write('{"n":2,"text":"naïve café 東京"}\n');
      destination.write('{"n":3}\n');
      await until(async () => readFileSync(file, "utf8").split("\n").length === 4, "the three lines to be written", 5_000);
      expect(readFileSync(file, "utf8")).toBe('{"n":1}\n{"n":2,"text":"naïve café 東京"}\n{"n":3}\n');
    } finally {
      destination.end();
    }
  });

  it("loses and reorders nothing across many batches, and writes the rest on flushSync", () => {
    const { file, fd } = tempFile();
    const destination = new BatchedDestination(fd);
    const expected: string[] = [];
    for (let i = 0; i < 5_000; i++) {
      // Some lines with characters of two, three and four UTF-8 bytes, across batches' ends.
      const line = `{"i":${i},"pad":"${"x".repeat(i % 97)}${i % 7 === 0 ? "é東😀" : ""}"}\n`;
      expected.push(line);
      destination.write(line);
    }
    destination.flushSync();
    expect(readFileSync(file, "utf8")).toBe(expected.join(""));
    destination.end();
  });

  it("writes what is waiting when it ends", () => {
    const { file, fd } = tempFile();
    const destination = new BatchedDestination(fd);
    destination.write("last\n");
    destination.end();
    expect(readFileSync(file, "utf8")).toBe("last\n");
  });

  it("writes what is waiting when the process exits, through pino", async () => {
    const logger = path.resolve("src/platform/logger.ts");
    const script = `
      import { createLogger } from ${JSON.stringify(logger)};
      const log = createLogger("info");
      for (let i = 0; i < 3; i++) log.info({ i }, "line");
      process.exit(0);
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], { timeout: 30_000 });
    const lines = stdout.trim().split("\n").map((l) => JSON.parse(l) as { i: number; msg: string; service: string });
    expect(lines.map((l) => [l.i, l.msg, l.service])).toEqual([
      [0, "line", "warden"],
      [1, "line", "warden"],
      [2, "line", "warden"],
    ]);
  });
});
