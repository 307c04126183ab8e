import { describe, expect, it } from "vitest";
import { passedStream, translatedStream } from "../src/gateway/dataplane/streams.ts";
import type { StreamReader, StreamWriter } from "../src/gateway/formats/format.ts";
import { SseEvent } from "../src/gateway/providers/sse.ts";
import { StreamMeter } from "../src/gateway/usage/stream-meter.ts";
import { drain } from "./support/drain.ts";

/** A provider's events, as an iterator that says whether it was closed (as the upstream body would be). */
function provider(count: number): { events: AsyncIterableIterator<SseEvent>; closed: () => boolean } {
  let sent = 0;
  let closed = false;
  const events: AsyncIterableIterator<SseEvent> = {
    async next() {
      if (closed || sent === count) return { done: true, value: undefined };
      sent += 1;
      return { done: false, value: new SseEvent(Buffer.from(`event: response.output_text.delta\ndata: {"delta":"d${sent}"}\n\n`)) };
    },
    async return() {
      closed = true;
      return { done: true, value: undefined };
    },
    [Symbol.asyncIterator]: () => events,
  };
  return { events, closed: () => closed };
}

describe("outgoing streams", () => {
  it("pass the provider's events through whole, in order, metering each", async () => {
    const { events, closed } = provider(3);
    const meter = new StreamMeter(0);
    const { text: out, error } = await drain(passedStream(events, "responses", meter).pieces);
    expect(error).toBeUndefined();
    expect(out).toEqual([1, 2, 3].map((n) => `event: response.output_text.delta\ndata: {"delta":"d${n}"}\n\n`));
    expect(meter.text).toEqual({ kept: "", total: 6 });
    expect(closed()).toBe(false);
  });

  it("close the provider's events when the caller stops early", async () => {
    const { events, closed } = provider(5);
    for await (const piece of passedStream(events, "responses", new StreamMeter(0)).pieces) {
      expect(piece.toString()).toContain("d1");
      break;
    }
    expect(closed()).toBe(true);
  });

  it("close the provider's events when writing an event in the caller's format throws", async () => {
    const { events, closed } = provider(5);
    const reader: StreamReader = { read: (event) => [{ type: "text_delta", index: 0, text: event.data ?? "" }], end: () => [] };
    let written = 0;
    const writer: StreamWriter = {
      write: () => {
        written += 1;
        if (written === 2) throw new Error("cannot write this event");
        return "data: x\n\n";
      },
      error: () => "",
    };
    const { text: out, error } = await drain(translatedStream(events, reader, writer, new StreamMeter(0)).pieces);
    expect(out).toEqual(["data: x\n\n"]);
    expect((error as Error).message).toBe("cannot write this event");
    // The close is started, not awaited, by the one that threw: the generator in between closes
    // the provider's events on its next turn.
    await new Promise(setImmediate);
    expect(closed()).toBe(true);
  });
});
