/**
 * The dispatch handler's answer body (src/platform/dispatch.ts), read whole or chunk by chunk,
 * before or after it has all arrived, against a server on loopback.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Pool } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { dispatchRequest } from "../src/platform/dispatch.ts";
import { BodyTooLarge } from "../src/platform/http.ts";
import { drain } from "./support/drain.ts";
import { heldBackWriter } from "./support/held-back.ts";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A server that answers with `handler`, and says when the answer's connection closed. */
async function serve(handler: (res: http.ServerResponse) => void) {
  let closed!: () => void;
  const connectionClosed = new Promise<void>((resolve) => (closed = resolve));
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => handler(res));
    res.on("close", () => closed());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { connections: 1 });
  cleanups.push(async () => {
    await pool.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const send = (signal = new AbortController().signal) => dispatchRequest(pool, { method: "POST", path: "/", body: "{}" }, signal);
  return { send, connectionClosed };
}

/** Written in three pieces, a tick apart. */
function inPieces(res: http.ServerResponse): void {
  res.writeHead(200, { "content-type": "text/plain" });
  res.write("one,");
  setImmediate(() => {
    res.write("two,");
    setImmediate(() => res.end("three"));
  });
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 20));

describe("a dispatched answer's body", () => {
  it("is read whole, as it arrives or after it has arrived", async () => {
    const { send } = await serve(inPieces);
    expect((await (await send()).bytes()).toString()).toBe("one,two,three");
    const late = await send();
    await tick();
    expect((await late.bytes()).toString()).toBe("one,two,three");
  });

  it("is read chunk by chunk, in order, as it arrives or from its first byte after it arrived", async () => {
    const { send } = await serve(inPieces);
    expect(await drain((await send()).chunks())).toEqual({ text: ["one,", "two,", "three"], error: undefined });
    const late = await send();
    await tick();
    expect(await drain(late.chunks())).toEqual({ text: ["one,", "two,", "three"], error: undefined });
  });

  it("is read one way only", async () => {
    const { send } = await serve(inPieces);
    const whole = await send();
    const read = whole.bytes();
    expect(() => whole.chunks()).toThrow("the answer's body is already being read");
    await expect(whole.bytes()).rejects.toThrow("the answer's body is already being read");
    expect((await read).toString()).toBe("one,two,three");
    const chunked = await send();
    const chunks = chunked.chunks();
    await expect(chunked.bytes()).rejects.toThrow("the answer's body is already being read");
    expect(await drain(chunks)).toEqual({ text: ["one,", "two,", "three"], error: undefined });
  });

  it("holds the server back while a chunk reader is behind, and gives every chunk once it reads", async () => {
    // 16 MB: far more than the socket buffers and the 16 chunks held before a pause.
    const total = 16 * 1024 * 1024;
    const writer = heldBackWriter(total);
    const { send } = await serve((res) => {
      res.writeHead(200);
      writer.write(res);
    });
    const chunks = (await send()).chunks();
    const first = await chunks.next();
    let received = first.done ? 0 : first.value.length;
    await writer.stalled();
    expect(writer.sent).toBeLessThan(total / 2);
    for await (const chunk of chunks) received += chunk.length;
    expect(received).toBe(total);
  });

  it("left by its chunk reader before its end, stops the call", async () => {
    const { send, connectionClosed } = await serve((res) => {
      res.writeHead(200);
      res.write("first");
      // Never ended: only the reader's leaving closes the call.
    });
    const chunks = (await send()).chunks();
    for await (const chunk of chunks) {
      expect(chunk.toString()).toBe("first");
      break;
    }
    await connectionClosed;
    expect(await chunks.next()).toEqual({ done: true, value: undefined });
  });

  it("past its cap, read whole: BodyTooLarge, and the call is stopped", async () => {
    const { send, connectionClosed } = await serve((res) => {
      res.writeHead(200);
      res.write(Buffer.alloc(1000, "a"));
      // Never ended: only the reader's stopping closes the call.
    });
    const answer = await send();
    await expect(answer.bytes(999)).rejects.toBeInstanceOf(BodyTooLarge);
    await connectionClosed;
  });

  it("the caller's signal aborted while it is read whole: rejects with its reason, and the call is stopped", async () => {
    const { send, connectionClosed } = await serve((res) => {
      res.writeHead(200);
      res.write("partial");
    });
    const controller = new AbortController();
    const answer = await send(controller.signal);
    const read = answer.bytes();
    const reason = new Error("the caller left");
    controller.abort(reason);
    await expect(read).rejects.toBe(reason);
    await connectionClosed;
  });

  it("broken off by the server: read whole or as a stream, the reader learns it", async () => {
    const broken = (res: http.ServerResponse) => {
      res.writeHead(200, { "content-length": "100" });
      res.write("only some");
      setImmediate(() => res.socket?.destroy());
    };
    const { send } = await serve(broken);
    await expect((await send()).bytes()).rejects.toMatchObject({ code: "UND_ERR_SOCKET" });
    // Broken before anyone reads it.
    const again = await serve(broken);
    const unread = await again.send();
    await tick();
    await expect(unread.bytes()).rejects.toMatchObject({ code: "UND_ERR_SOCKET" });
    const second = await serve(broken);
    const answer = await second.send();
    await tick();
    expect((await drain(answer.chunks())).error).toMatchObject({ code: "UND_ERR_SOCKET" });
  });

  it("broken off while read chunk by chunk: the chunks before it, then the error as mapError typed it, once", async () => {
    const { send } = await serve((res) => {
      res.writeHead(200, { "content-length": "100" });
      res.write("a");
      setImmediate(() => {
        res.write("b");
        setImmediate(() => res.socket?.destroy());
      });
    });
    const chunks = (await send()).chunks((err) => new Error(`typed: ${(err as { code?: string }).code}`));
    const { text, error } = await drain(chunks);
    expect(text.join("")).toBe("ab");
    expect((error as Error).message).toBe("typed: UND_ERR_SOCKET");
    expect(await chunks.next()).toEqual({ done: true, value: undefined });
  });

  it("the caller's signal aborted while it is read chunk by chunk: rejects with the reason as mapError typed it", async () => {
    const { send, connectionClosed } = await serve((res) => {
      res.writeHead(200);
      res.write("partial");
    });
    const controller = new AbortController();
    const chunks = (await send(controller.signal)).chunks((err) => ({ typed: err }));
    expect(String((await chunks.next()).value)).toBe("partial");
    const reading = chunks.next();
    const reason = new Error("the caller left");
    controller.abort(reason);
    await expect(reading).rejects.toEqual({ typed: reason });
    await connectionClosed;
  });
});
