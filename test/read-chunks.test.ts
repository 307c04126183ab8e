import { PassThrough, Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { readChunks } from "../src/platform/http.ts";
import { drain } from "./support/drain.ts";

describe("readChunks", () => {
  it("gives every chunk in order, then ends", async () => {
    const stream = new PassThrough();
    const reading = drain(readChunks(stream));
    stream.write("a");
    await new Promise(setImmediate);
    stream.write("b");
    stream.end("c");
    expect(await reading).toEqual({ text: ["a", "b", "c"], error: undefined });
  });

  it("gives the chunks that came before an error, then the error as mapError typed it", async () => {
    const stream = new PassThrough();
    const chunks = readChunks(stream, (err) => new Error(`typed: ${(err as Error).message}`));
    stream.write("a");
    stream.write("b");
    await new Promise(setImmediate);
    stream.destroy(new Error("socket reset"));
    const { text, error } = await drain(chunks);
    expect(text).toEqual(["a", "b"]);
    expect((error as Error).message).toBe("typed: socket reset");
    // Reported once: the iterator is finished afterwards.
    expect(await chunks.next()).toEqual({ done: true, value: undefined });
  });

  it("reports a close before the end as a premature close, as `for await` does", async () => {
    const stream = new PassThrough();
    const reading = drain(readChunks(stream));
    stream.write("a");
    await new Promise(setImmediate);
    stream.destroy();
    const { text, error } = await reading;
    expect(text).toEqual(["a"]);
    expect(error).toMatchObject({ message: "Premature close", code: "ERR_STREAM_PREMATURE_CLOSE" });
  });

  it("reports a stream already destroyed at once", async () => {
    const stream = new PassThrough();
    // Its error was someone else's to handle; only its state is read here.
    stream.on("error", () => undefined);
    stream.destroy(new Error("gone"));
    await new Promise(setImmediate);
    expect((await drain(readChunks(stream))).error).toMatchObject({ message: "gone" });
  });

  it("pauses the stream while 16 chunks wait for the reader, and resumes it once 4 are left", async () => {
    const stream = new Readable({ read() {} });
    const chunks = readChunks(stream);
    for (let i = 0; i < 20; i++) stream.push(String(i));
    await new Promise(setImmediate);
    expect(stream.isPaused()).toBe(true);
    const taken: string[] = [];
    for (let i = 0; i < 11; i++) taken.push(String((await chunks.next()).value));
    expect(stream.isPaused()).toBe(true);
    taken.push(String((await chunks.next()).value));
    expect(stream.isPaused()).toBe(false);
    stream.push(null);
    const rest = await drain(chunks);
    expect([...taken, ...rest.text]).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
  });

  it("destroys the stream when the reader stops early, as an abandoned `for await` does", async () => {
    const stream = new PassThrough();
    const chunks = readChunks(stream);
    stream.write("a");
    for await (const chunk of chunks) {
      expect(chunk.toString()).toBe("a");
      break;
    }
    expect(stream.destroyed).toBe(true);
    expect(await chunks.next()).toEqual({ done: true, value: undefined });
  });
});
