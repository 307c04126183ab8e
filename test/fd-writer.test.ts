import { execFileSync, spawn } from "node:child_process";
import { closeSync, constants, mkdtempSync, openSync, readFileSync, readSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { FdWriter } from "../src/platform/fd-writer.ts";
import { sleep, until } from "./support/wait.ts";

/**
 * The log's writer: batches reach the descriptor whole and in order, through partial writes and
 * a full pipe; `flush` answers once they are written; an error drops the batch and is said once.
 */

const dirs: string[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "warden-fd-writer-"));
  dirs.push(dir);
  return dir;
}

/** `count` batches of `size` bytes, each filled with its own number, so that order and loss show. */
function batches(count: number, size: number): Buffer[] {
  return Array.from({ length: count }, (_, i) => Buffer.alloc(size, `${i % 10}`));
}

const flushed = <B extends Uint8Array>(writer: FdWriter<B>) => new Promise<void>((resolve) => writer.flush(resolve));

describe("FdWriter", () => {
  it("writes batches to a file in order, and answers flush once they are written", async () => {
    const file = path.join(tempDir(), "out");
    const fd = openSync(file, "w");
    const writer = new FdWriter(fd);
    const sent = batches(50, 8192);
    for (const bytes of sent) writer.write(bytes);
    await flushed(writer);
    expect(readFileSync(file).equals(Buffer.concat(sent))).toBe(true);
    writer.end();
  });

  it("hands each buffer back once its bytes are written, in order, and writes only the length it was given", async () => {
    const file = path.join(tempDir(), "out");
    const handedBack: Array<{ buffer: Buffer; size: number }> = [];
    const writer = new FdWriter<Buffer>(openSync(file, "w"), (buffer) => handedBack.push({ buffer, size: statSync(file).size }));
    const sent = batches(30, 1000);
    for (const bytes of sent) writer.write(bytes, 600);
    await flushed(writer);
    expect(handedBack.map((h) => h.buffer)).toEqual(sent);
    // Each came back when the file held its 600 bytes and those before it.
    expect(handedBack.map((h) => h.size)).toEqual(sent.map((_, i) => 600 * (i + 1)));
    expect(readFileSync(file).equals(Buffer.concat(sent.map((b) => b.subarray(0, 600))))).toBe(true);
    writer.end();
  });

  it("answers flush on the next tick when nothing is waiting", async () => {
    const writer = new FdWriter(openSync(path.join(tempDir(), "out"), "w"));
    let answered = false;
    writer.flush(() => (answered = true));
    expect(answered).toBe(false);
    await new Promise((resolve) => setImmediate(resolve));
    expect(answered).toBe(true);
    writer.end();
  });

  it("goes on through partial writes and a full pipe until its reader has taken every byte", async () => {
    // A pipe holds 64 KiB: 600 KiB written to it without blocking comes back short and with EAGAIN
    // until the reader, a slow one here, makes room.
    const fifo = path.join(tempDir(), "pipe");
    execFileSync("mkfifo", [fifo]);
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writerFd = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
    const writer = new FdWriter(writerFd);
    const sent = Buffer.concat(batches(75, 8192));
    for (let at = 0; at < sent.length; at += 8192) writer.write(sent.subarray(at, at + 8192));
    let done = false;
    writer.flush(() => (done = true));
    const received: Buffer[] = [];
    let total = 0;
    const chunk = Buffer.alloc(16_384);
    const deadline = Date.now() + 30_000;
    while (total < sent.length && Date.now() < deadline) {
      try {
        const n = readSync(reader, chunk);
        received.push(Buffer.from(chunk.subarray(0, n)));
        total += n;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EAGAIN") throw error;
      }
      await sleep(5);
    }
    expect(total).toBe(sent.length);
    expect(Buffer.concat(received).equals(sent)).toBe(true);
    await until(async () => done, "flush to answer", 10_000);
    writer.end();
    closeSync(reader);
  });

  it("writes a batch waiting to be tried again (a full pipe) on flushSync, from where it stopped", async () => {
    // A process fills a pipe nobody reads yet, so that its writer waits to try again, then calls
    // flushSync and exits: the batch that was waiting, and those behind it, must all arrive once.
    const fifo = path.join(tempDir(), "pipe");
    execFileSync("mkfifo", [fifo]);
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const script = `
      import { constants, openSync } from "node:fs";
      import { FdWriter } from ${JSON.stringify(path.resolve("src/platform/fd-writer.ts"))};
      const writer = new FdWriter(openSync(${JSON.stringify(fifo)}, constants.O_WRONLY | constants.O_NONBLOCK));
      for (let i = 0; i < 20; i++) writer.write(Buffer.alloc(8192, String.fromCharCode(65 + i)));
      setTimeout(() => { writer.flushSync(); process.exit(0); }, 1000);
    `;
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: "ignore" });
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    await sleep(1500);
    const received: Buffer[] = [];
    let total = 0;
    const chunk = Buffer.alloc(16_384);
    const deadline = Date.now() + 30_000;
    while (total < 20 * 8192 && Date.now() < deadline) {
      try {
        const n = readSync(reader, chunk);
        received.push(Buffer.from(chunk.subarray(0, n)));
        total += n;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EAGAIN") throw error;
        await sleep(5);
      }
    }
    expect(await exited).toBe(0);
    expect(Buffer.concat(received).toString("latin1")).toBe(Array.from({ length: 20 }, (_, i) => String.fromCharCode(65 + i).repeat(8192)).join(""));
    closeSync(reader);
  });

  it("writes what is queued on flushSync, in order, beside a batch already in flight", async () => {
    const file = path.join(tempDir(), "out");
    const writer = new FdWriter(openSync(file, "w"));
    // Each batch its own letter, so that the file reads back as the order its batches landed in.
    const sent = Array.from({ length: 20 }, (_, i) => Buffer.alloc(4096, String.fromCharCode(65 + i)));
    for (const bytes of sent) writer.write(bytes);
    writer.flushSync();
    await flushed(writer);
    // The first batch went to an asynchronous write at once, and lands between any two of the
    // other nineteen, which were written by flushSync one after another, in order.
    const text = readFileSync(file, "latin1");
    expect(text.length).toBe(20 * 4096);
    const order = Array.from({ length: 20 }, (_, i) => text.slice(i * 4096, (i + 1) * 4096));
    for (const block of order) expect(block).toBe(block[0]!.repeat(4096));
    const letters = order.map((block) => block[0]).join("");
    expect(letters.replace("A", "")).toBe("BCDEFGHIJKLMNOPQRST");
    expect(letters.split("A").length).toBe(2);
    writer.end();
  });

  it("drops a batch it cannot write, says so once on stderr, and goes on answering", async () => {
    const file = path.join(tempDir(), "read-only");
    closeSync(openSync(file, "w"));
    const fd = openSync(file, "r");
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    const writer = new FdWriter(fd);
    for (const bytes of batches(3, 100)) writer.write(bytes);
    await flushed(writer);
    writer.write(Buffer.from("more"));
    writer.flushSync();
    await flushed(writer);
    expect(stderr.mock.calls.map(([text]) => text)).toEqual([`warden: cannot write the log to file descriptor ${fd} (EBADF); lines are being dropped\n`]);
    expect(readFileSync(file).length).toBe(0);
    writer.end();
  });
});
