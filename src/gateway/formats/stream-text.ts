import { Buffer } from "node:buffer";
import { rewriteAnswerText } from "../endpoints/caller-text.ts";
import { SseEvent } from "../providers/sse.ts";
import type { StreamEvent } from "./canonical.ts";
import type { FormatName } from "./format.ts";

/**
 * Where a stream's items carry the answer's text, for output guardrails on streams: the text each
 * adds to which channel (a content block, or a choice), the channels it ends, and the same item
 * with other text. Tool-call arguments and reasoning are not answer text, as for answers that are
 * not streamed.
 */
export interface StreamText<T> {
  /** The pieces of text an item adds, each to its channel. */
  pieces(item: T): { channel: string; text: string }[];
  /** The channels that end with this item. */
  ends(item: T): string[];
  /** The item with its pieces' texts replaced, in the order `pieces` gave them. */
  withTexts(item: T, texts: readonly string[]): T;
  /** An item that repeats text already streamed (a "done" snapshot), rewritten; undefined when it is none. */
  snapshot(item: T, rewrite: (text: string) => string): T | undefined;
}

type Json = Record<string, unknown>;

const isRecord = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

/** The event's JSON data, when it is an object. */
function dataOf(event: SseEvent): Json | undefined {
  const parsed = event.json;
  return parsed.kind === "json" && isRecord(parsed.value) ? parsed.value : undefined;
}

/** The event again, with other data (a copy: the one read stays as it was). */
function withData(event: SseEvent, edit: (data: Json) => void): SseEvent {
  const data = structuredClone(dataOf(event)!);
  edit(data);
  const name = event.name;
  return new SseEvent(Buffer.from(`${name === null ? "" : `event: ${name}\n`}data: ${JSON.stringify(data)}\n\n`));
}

/**
 * Events that may matter to the guardrails, by their `event:` name: others are not parsed (an
 * event without a name is, as a provider may leave names out).
 */
const named = (event: SseEvent, names: ReadonlySet<string>): boolean => event.name === null || names.has(event.name);
const messagesNames: ReadonlySet<string> = new Set(["content_block_delta", "content_block_stop"]);
const responsesNames: ReadonlySet<string> = new Set([
  "response.output_text.delta",
  "response.output_text.done",
  "response.content_part.done",
  "response.output_item.done",
  "response.completed",
  "response.incomplete",
  "response.failed",
]);

/** A content block's text deltas (Anthropic Messages). */
const messages: StreamText<SseEvent> = {
  pieces(event) {
    if (!named(event, messagesNames)) return [];
    const data = dataOf(event);
    if (data?.type !== "content_block_delta" || !isRecord(data.delta) || data.delta.type !== "text_delta" || typeof data.delta.text !== "string") return [];
    return [{ channel: String(data.index), text: data.delta.text }];
  },
  ends(event) {
    if (!named(event, messagesNames)) return [];
    const data = dataOf(event);
    return data?.type === "content_block_stop" ? [String(data.index)] : [];
  },
  withTexts: (event, [text]) => withData(event, (data) => void ((data.delta as Json).text = text)),
  snapshot: () => undefined,
};

/** Output text deltas (OpenAI Responses), by output item and content part; the done events and the final response repeat the text. */
const responses: StreamText<SseEvent> = {
  pieces(event) {
    if (!named(event, responsesNames)) return [];
    const data = dataOf(event);
    if (data?.type !== "response.output_text.delta" || typeof data.delta !== "string") return [];
    return [{ channel: `${String(data.output_index)}:${String(data.content_index)}`, text: data.delta }];
  },
  ends(event) {
    if (!named(event, responsesNames)) return [];
    const data = dataOf(event);
    return data?.type === "response.output_text.done" ? [`${String(data.output_index)}:${String(data.content_index)}`] : [];
  },
  withTexts: (event, [text]) => withData(event, (data) => void (data.delta = text)),
  snapshot(event, rewrite) {
    if (!named(event, responsesNames)) return undefined;
    const data = dataOf(event);
    switch (data?.type) {
      case "response.output_text.done":
        return typeof data.text === "string" ? withData(event, (d) => void (d.text = rewrite(d.text as string))) : undefined;
      case "response.content_part.done":
        return withData(event, (d) => rewriteAnswerText({ content: [d.part] }, rewrite));
      case "response.output_item.done":
        return withData(event, (d) => rewriteAnswerText({ output: [d.item] }, rewrite));
      case "response.completed":
      case "response.incomplete":
      case "response.failed":
        return withData(event, (d) => rewriteAnswerText(d.response, rewrite));
      default:
        return undefined;
    }
  },
};

/** Each choice's content deltas (OpenAI Chat Completions); a choice ends with its finish reason. */
const chat: StreamText<SseEvent> = {
  pieces(event) {
    const pieces: { channel: string; text: string }[] = [];
    for (const choice of choicesOf(event)) {
      if (isRecord(choice.delta) && typeof choice.delta.content === "string") pieces.push({ channel: String(choice.index), text: choice.delta.content });
    }
    return pieces;
  },
  ends: (event) => choicesOf(event).filter((choice) => choice.finish_reason != null).map((choice) => String(choice.index)),
  withTexts(event, texts) {
    return withData(event, (data) => {
      let i = 0;
      for (const choice of data.choices as Json[]) {
        if (isRecord(choice.delta) && typeof choice.delta.content === "string") choice.delta.content = texts[i++];
      }
    });
  },
  snapshot: () => undefined,
};

function choicesOf(event: SseEvent): Json[] {
  const choices = dataOf(event)?.choices;
  return Array.isArray(choices) ? choices.filter(isRecord) : [];
}

/** The text of each format's own server-sent events. */
export const sseStreamText: Record<FormatName, StreamText<SseEvent>> = { messages, responses, chat };

/** Canonical events (formats/canonical.ts), which a translated stream is read into: writers repeat only what they were given. */
export const canonicalStreamText: StreamText<StreamEvent> = {
  pieces: (event) => (event.type === "text_delta" ? [{ channel: String(event.index), text: event.text }] : []),
  ends: (event) => (event.type === "block_stop" ? [String(event.index)] : []),
  withTexts: (event, [text]) => ({ ...event, text } as StreamEvent),
  snapshot: () => undefined,
};
