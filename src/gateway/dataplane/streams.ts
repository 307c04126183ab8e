import { chatStreamError } from "../formats/chat.ts";
import type { FormatName, StreamReader, StreamWriter } from "../formats/format.ts";
import { nextSequenceNumber, streamErrorEvent, type SseEvent } from "../providers/sse.ts";
import type { StreamMeter } from "../usage/stream-meter.ts";
import { canonicalStreamText, sseStreamText } from "../formats/stream-text.ts";
import type { StreamGuard } from "../guardrails/stream-guard.ts";
import { guardedStream } from "./guarded-stream.ts";

/** What goes to a streaming caller: whole events as they are made, and the error event that ends a broken stream. */
export interface OutgoingStream {
  pieces: AsyncIterable<Buffer | string>;
  /** The caller's format's in-stream error event, for a failure after the first piece. */
  errorEvent(message: string): Buffer | string;
}

/**
 * The provider's events as they came: the caller and the provider speak the same format. With
 * output guardrails, they are held back until checked (guarded-stream.ts), and what the caller
 * is sent is what is metered (and kept for a pipeline row).
 */
export function passedStream(events: AsyncIterable<SseEvent>, format: FormatName, meter: StreamMeter, guard?: StreamGuard): OutgoingStream {
  let last: SseEvent | undefined;
  const sent = (guard ? guardedStream(events, sseStreamText[format], guard) : events)[Symbol.asyncIterator]();
  // Each event metered and mapped to its bytes by hand: an async generator here cost every event
  // a promise and a microtask turn more.
  const pieces: AsyncIterableIterator<Buffer> = {
    async next() {
      const result = await sent.next();
      if (result.done) return { done: true, value: undefined };
      closedOnThrow(sent, () => meter.observe(result.value));
      last = result.value;
      return { done: false, value: result.value.raw };
    },
    async return() {
      await sent.return?.();
      return { done: true, value: undefined };
    },
    [Symbol.asyncIterator]: () => pieces,
  };
  return {
    pieces,
    errorEvent(message) {
      if (format === "chat") return chatStreamError(message);
      return format === "messages" ? streamErrorEvent("messages", message) : streamErrorEvent("responses", message, nextSequenceNumber(last));
    },
  };
}

/**
 * The provider's events read into canonical ones and written in the caller's format, event by
 * event: nothing is held back but what the caller's format itself delays (a writer emits an event
 * once it can be whole).
 */
export function translatedStream(events: AsyncIterable<SseEvent>, reader: StreamReader, writer: StreamWriter, meter: StreamMeter, guard?: StreamGuard): OutgoingStream {
  // Each canonical event yielded by hand: `yield*` over the reader's array wraps it in an async
  // iterator, a promise and a microtask turn more per event.
  const read = (async function* () {
    for await (const event of events) for (const canonical of reader.read(event)) yield canonical;
    for (const canonical of reader.end()) yield canonical;
  })();
  // Output guardrails read the canonical events: the writer repeats only the text it is given.
  const sent = (guard ? guardedStream(read, canonicalStreamText, guard) : read)[Symbol.asyncIterator]();
  // By hand, as in passedStream; a canonical event the writer holds back (it writes "") is skipped.
  const pieces: AsyncIterableIterator<string> = {
    async next() {
      for (;;) {
        const result = await sent.next();
        if (result.done) return { done: true, value: undefined };
        const written = closedOnThrow(sent, () => {
          meter.observeCanonical(result.value);
          return writer.write(result.value);
        });
        if (written !== "") return { done: false, value: written };
      }
    },
    async return() {
      await sent.return?.(undefined);
      return { done: true, value: undefined };
    },
    [Symbol.asyncIterator]: () => pieces,
  };
  return { pieces, errorEvent: (message) => writer.error(message) };
}

/**
 * `work`'s value; if it throws, `source` is closed (and the upstream body with it), as a
 * generator's `for await` closes what it reads when its body throws: a caller's `for await` does
 * not close an iterator whose own `next()` threw. Synchronous, so that each event costs no
 * promise more; the close is not awaited.
 */
function closedOnThrow<T>(source: AsyncIterator<unknown>, work: () => T): T {
  try {
    return work();
  } catch (err) {
    source.return?.()?.catch(() => undefined);
    throw err;
  }
}

/** Unix seconds, for answers whose format carries a creation time the provider's does not. */
export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
