import { execFile } from "node:child_process";
import { mkdtempSync, openSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it, vi } from "vitest";
import { pino } from "pino";
import { AccessLineWriter, jsonText, JsonTextMemo } from "../src/platform/access-line.ts";
import { accessLogger, BatchedDestination } from "../src/platform/logger.ts";
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

/**
 * Waits until the file holds `expected` bytes: the periodic flush writes what is waiting, and the
 * writer's batches go out one after another, in order. Not flushSync: with a batch's asynchronous
 * write still in flight, flushSync writes what is queued behind it at once, and the two can reach
 * the file in either order.
 */
async function written(file: string, expected: string): Promise<string> {
  const bytes = Buffer.byteLength(expected);
  await until(async () => statSync(file).size >= bytes, `${bytes} bytes in the log file`, 10_000);
  return readFileSync(file, "utf8");
}

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

  it("loses and reorders nothing across many batches", async () => {
    const { file, fd } = tempFile();
    const destination = new BatchedDestination(fd);
    const expected: string[] = [];
    for (let i = 0; i < 5_000; i++) {
      // Some lines with characters of two, three and four UTF-8 bytes, across batches' ends.
      const line = `{"i":${i},"pad":"${"x".repeat(i % 97)}${i % 7 === 0 ? "é東😀" : ""}"}\n`;
      expected.push(line);
      destination.write(line);
    }
    expect(await written(file, expected.join(""))).toBe(expected.join(""));
    destination.end();
  });

  it("keeps ASCII lines, UTF-8 lines and lines longer than a batch in order, byte for byte", async () => {
    const { file, fd } = tempFile();
    const destination = new BatchedDestination(fd);
    const expected: string[] = [];
    for (let i = 0; i < 3_000; i++) {
      // A batch is 8 KiB: some lines are longer than a batch, in either kind, and longer than a
      // batch only once encoded (6,000 three-byte characters).
      const long = i % 500 === 0 ? "y".repeat(9_000) : "";
      const wide = i % 700 === 350 ? "東".repeat(6_000) : "";
      if (i % 3 === 0) {
        const line = `{"i":${i},"ascii":"${"a".repeat(i % 89)}${long}"}\n`;
        destination.writeAscii(line);
        expected.push(line);
      } else {
        const line = `{"i":${i},"text":"${"é".repeat(i % 31)}${wide}${long}"}\n`;
        destination.write(line);
        expected.push(line);
      }
    }
    expect(await written(file, expected.join(""))).toBe(expected.join(""));
    destination.end();
  });

  it("writes an access line with characters past ASCII escaped, as JSON that reads back to the same values", () => {
    const { file, fd } = tempFile();
    const destination = new BatchedDestination(fd);
    const logger = pino({ level: "info", base: { service: "warden" } }, destination);
    const writer = new AccessLineWriter(accessLogger(logger, { component: "gateway" }));
    const model = 'modèle "東京" 😀 \\ \u0001';
    writer.write(`"model":${jsonText(model)},"status":200`);
    destination.flushSync();
    const text = readFileSync(file, "latin1");
    expect(/^[\x00-\x7f]*$/.test(text)).toBe(true);
    const { time, ...line } = JSON.parse(text) as Record<string, unknown>;
    expect(typeof time).toBe("number");
    expect(line).toEqual({ level: 30, service: "warden", component: "gateway", model, status: 200, msg: "request" });
    destination.end();
  });

  it("writes an access line's time as pino's epochTime writes it, whatever its milliseconds", () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      const { file, fd } = tempFile();
      const destination = new BatchedDestination(fd);
      const logger = pino({ level: "info", base: { service: "warden" } }, destination);
      const writer = new AccessLineWriter(accessLogger(logger, { component: "gateway" }));
      const times = [1_764_031_200_000, 1_764_031_200_007, 1_764_031_200_070, 1_764_031_200_999, 1_764_031_201_000, 1_764_031_201_000, 1_764_031_199_001];
      for (const time of times) {
        vi.setSystemTime(time);
        writer.write(`"n":${time}`);
      }
      destination.flushSync();
      const lines = readFileSync(file, "latin1").trim().split("\n").map((l) => JSON.parse(l) as { time: number; n: number });
      expect(lines.map((l) => l.time)).toEqual(times);
      expect(readFileSync(file, "latin1")).toContain(`{"level":30,"time":1764031200007,"service":"warden","component":"gateway","n":1764031200007,"msg":"request"}\n`);
      destination.end();
    } finally {
      vi.useRealTimers();
    }
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

describe("jsonText", () => {
  it("is JSON.stringify's text for plain ASCII, and ASCII with the same value for the rest", () => {
    expect(jsonText("gpt-4o")).toBe('"gpt-4o"');
    expect(jsonText(null)).toBe("null");
    expect(jsonText(undefined)).toBe("null");
    expect(jsonText('a"b\\c\n')).toBe(JSON.stringify('a"b\\c\n'));
    expect(jsonText("café")).toBe('"caf\\u00e9"');
    expect(jsonText("😀")).toBe('"\\ud83d\\ude00"');
    for (const value of ["", " ", "~", "\u007f", "\u0080", "\u00ff", "\u0100", "\uffff", "\ud800", "x\udfffy", "tab\there", "東京 and ü"]) {
      const text = jsonText(value);
      expect(/^[\x00-\x7f]*$/.test(text)).toBe(true);
      expect(JSON.parse(text)).toBe(value);
    }
  });
});

describe("JsonTextMemo", () => {
  it("gives jsonText's text for every value, repeated or not, past the number it keeps", () => {
    const memo = new JsonTextMemo();
    expect(memo.text(null)).toBe("null");
    expect(memo.text(undefined)).toBe("null");
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 1_500; i++) {
        const value = i % 3 === 0 ? `modèle-${i}` : `model-"${i}"`;
        expect(memo.text(value)).toBe(jsonText(value));
      }
    }
  });
});
