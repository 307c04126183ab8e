import { Buffer } from "node:buffer";
import type { Family } from "../config/types.ts";
import { UpstreamConnectionError } from "./errors.ts";

/**
 * Server-sent events for pass-through. The splitter works on bytes: an event ends at a blank line,
 * and CR and LF never occur inside a multi-byte UTF-8 character, so every complete event is also
 * whole characters, however the chunks fell. The data plane writes whole events only, so a stream
 * cut short never leaves a half-written event open at the client.
 */

const LF = 0x0a;
const CR = 0x0d;

export type SseData =
  | { kind: "none" }
  | { kind: "json"; value: unknown }
  | { kind: "malformed"; text: string; error: string };

/** One complete event: its raw bytes (blank line included) and, parsed on demand, its fields. */
export class SseEvent {
  readonly raw: Buffer;
  #fields: { name: string | null; data: string | null } | undefined;
  #json: SseData | undefined;

  constructor(raw: Buffer) {
    this.raw = raw;
  }

  /** The `event:` field, or null when there is none (the SSE default, "message"). */
  get name(): string | null {
    return this.#parse().name;
  }

  /** The `data:` lines joined with "\n", or null when there are none. */
  get data(): string | null {
    return this.#parse().data;
  }

  /** The data as JSON; malformed data is reported, never thrown. */
  get json(): SseData {
    if (this.#json === undefined) {
      const data = this.data;
      if (data === null) this.#json = { kind: "none" };
      else {
        try {
          this.#json = { kind: "json", value: JSON.parse(data) };
        } catch (err) {
          this.#json = { kind: "malformed", text: data, error: err instanceof Error ? err.message : String(err) };
        }
      }
    }
    return this.#json;
  }

  #parse(): { name: string | null; data: string | null } {
    if (this.#fields !== undefined) return this.#fields;
    let name: string | null = null;
    let data: string | null = null;
    let text = this.raw.toString("utf8");
    // A byte-order mark may open the stream, so only the first event can carry one.
    if (text.charCodeAt(0) === BOM) text = text.slice(1);
    // Lines found with indexOf and fields read in place, not split and sliced: every event of a
    // stream is read (a third of the cost of passing it through, measured). Lines end at LF,
    // CR LF or a lone CR. Each search starts past the last one's find, so the walk stays linear.
    const length = text.length;
    let nextLf = -2;
    let nextCr = -2;
    let nextColon = -2;
    let at = 0;
    while (at < length) {
      if (nextLf !== -1 && nextLf < at) nextLf = text.indexOf("\n", at);
      if (nextCr !== -1 && nextCr < at) nextCr = text.indexOf("\r", at);
      let end = nextLf === -1 ? length : nextLf;
      let next = end + 1;
      if (nextCr !== -1 && nextCr < end) {
        end = nextCr;
        next = text.charCodeAt(nextCr + 1) === LF ? nextCr + 2 : nextCr + 1;
      }
      if (end > at && text.charCodeAt(at) !== COLON) {
        if (nextColon !== -1 && nextColon < at) nextColon = text.indexOf(":", at);
        const colon = nextColon === -1 || nextColon > end ? end : nextColon;
        let valueStart = colon < end ? colon + 1 : end;
        if (valueStart < end && text.charCodeAt(valueStart) === SPACE) valueStart += 1;
        const fieldLength = colon - at;
        if (fieldLength === 5 && text.startsWith("event", at)) name = text.slice(valueStart, end);
        else if (fieldLength === 4 && text.startsWith("data", at)) {
          const value = text.slice(valueStart, end);
          data = data === null ? value : `${data}\n${value}`;
        }
      }
      at = next;
    }
    this.#fields = { name, data };
    return this.#fields;
  }
}

const BOM = 0xfeff;
const COLON = 0x3a;
const SPACE = 0x20;

/** Incremental splitter: push chunks, get the events they complete. */
export class SseSplitter {
  /** Bytes of the event being read, from earlier chunks. */
  #parts: Buffer[] = [];
  #atLineStart = true;
  /** The last byte was a CR ending a non-empty line: an LF right after belongs to it. */
  #afterCr = false;
  /** The last chunk ended with the CR of a blank line: the event is complete, plus an LF if one follows. */
  #endPendingLf = false;

  push(chunk: Buffer): SseEvent[] {
    const events: SseEvent[] = [];
    let start = 0;
    let i = 0;
    // Next CR and LF at or after the scan position; -1: none in this chunk; -2: not searched yet.
    let nextCr = -2;
    let nextLf = -2;
    if (this.#endPendingLf && chunk.length > 0) {
      this.#endPendingLf = false;
      if (chunk[0] === LF) i = 1;
      events.push(this.#take(chunk, 0, i));
      start = i;
    }
    for (; i < chunk.length; i++) {
      const byte = chunk[i];
      if (byte === LF) {
        if (this.#afterCr) this.#afterCr = false;
        else if (this.#atLineStart) {
          events.push(this.#take(chunk, start, i + 1));
          start = i + 1;
        } else this.#atLineStart = true;
      } else if (byte === CR) {
        if (this.#atLineStart) {
          if (i + 1 === chunk.length) {
            // Whether an LF follows is in the next chunk; the event waits for it.
            this.#endPendingLf = true;
            break;
          }
          const end = chunk[i + 1] === LF ? i + 2 : i + 1;
          events.push(this.#take(chunk, start, end));
          start = end;
          i = end - 1;
          this.#afterCr = false;
        } else {
          this.#atLineStart = true;
          this.#afterCr = true;
        }
      } else {
        this.#atLineStart = false;
        this.#afterCr = false;
        // Jump to the line's end with indexOf: an event can be one long JSON line.
        if (nextCr !== -1 && nextCr <= i) nextCr = chunk.indexOf(CR, i + 1);
        if (nextLf !== -1 && nextLf <= i) nextLf = chunk.indexOf(LF, i + 1);
        const next = Math.min(nextCr === -1 ? chunk.length : nextCr, nextLf === -1 ? chunk.length : nextLf);
        i = next - 1;
      }
    }
    if (start < chunk.length) this.#parts.push(chunk.subarray(start));
    return events;
  }

  /**
   * At the end of the stream: the event still waiting for a possible LF, if any, and the bytes of
   * an event that never got its blank line, if any (the stream was cut short).
   */
  end(): { event: SseEvent | undefined; incomplete: Buffer | undefined } {
    let event: SseEvent | undefined;
    if (this.#endPendingLf) {
      this.#endPendingLf = false;
      event = this.#take(Buffer.alloc(0), 0, 0);
    }
    const incomplete = this.#parts.length > 0 ? Buffer.concat(this.#parts) : undefined;
    this.#parts = [];
    return { event, incomplete };
  }

  #take(chunk: Buffer, start: number, end: number): SseEvent {
    const tail = chunk.subarray(start, end);
    const raw = this.#parts.length === 0 ? tail : Buffer.concat([...this.#parts, tail]);
    this.#parts = [];
    this.#atLineStart = true;
    this.#afterCr = false;
    return new SseEvent(raw);
  }
}

/**
 * The complete events of an upstream body. A body that ends inside an event throws
 * UpstreamConnectionError (phase "body"), as a dropped connection does: the response was cut short.
 */
export async function* sseEvents(body: AsyncIterable<Buffer>): AsyncGenerator<SseEvent, void, undefined> {
  const splitter = new SseSplitter();
  // Each event yielded by hand: `yield*` over the array wraps it in an async iterator, a promise
  // and a microtask turn more per event.
  for await (const chunk of body) for (const event of splitter.push(chunk)) yield event;
  const { event, incomplete } = splitter.end();
  if (event !== undefined) yield event;
  if (incomplete !== undefined) throw new UpstreamConnectionError("ERR_SSE_INCOMPLETE_EVENT", "body");
}

/**
 * The sequence_number for an error event written after `last` (the last event passed through):
 * one past its own, read lazily so only that one event is ever parsed; 0 when it has none.
 */
export function nextSequenceNumber(last: SseEvent | undefined): number {
  const parsed = last?.json;
  if (parsed?.kind !== "json" || typeof parsed.value !== "object" || parsed.value === null) return 0;
  const n = (parsed.value as { sequence_number?: unknown }).sequence_number;
  return typeof n === "number" && Number.isInteger(n) ? n + 1 : 0;
}

/**
 * The family's own in-stream error event, written when the upstream fails after the first event.
 * Both official SDKs throw an APIError carrying `message` on an `error` event. For the responses
 * family, pass the sequence_number that follows the last event written (OpenAI's
 * ResponseErrorEvent requires one; see nextSequenceNumber).
 */
export function streamErrorEvent(family: Family, message: string, sequenceNumber = 0): Buffer {
  const data =
    family === "messages"
      ? { type: "error", error: { type: "api_error", message } }
      : { type: "error", code: null, message, param: null, sequence_number: sequenceNumber };
  return Buffer.from(`event: error\ndata: ${JSON.stringify(data)}\n\n`);
}
