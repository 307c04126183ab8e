/**
 * Anthropic's messages format, its answers: the Message object, its usage and stop reason, and
 * the stream's reader and writer. The requests are in messages.ts.
 */
import { providerErrorToGatewayError, unreadableAnswer } from "../dataplane/errors.ts";
import { UpstreamConnectionError } from "../providers/errors.ts";
import { streamErrorEvent, type SseEvent } from "../providers/sse.ts";
import type { AnswerPart, CanonicalAnswer, StopReason, StreamEvent, Usage } from "./canonical.ts";
import { isObject, type Json } from "./fields.ts";
import type { StreamReader, StreamWriter } from "./format.ts";

/**
 * JSON text of a parsed value; null when it is nested too deeply for JSON.stringify, which
 * recurses (JSON.parse does not, so such a value can arrive) and would throw a RangeError.
 */
export function jsonText(value: unknown): string | null {
  try {
    return JSON.stringify(value);
  } catch (err) {
    if (err instanceof RangeError) return null;
    throw err;
  }
}

// Usage

/**
 * Anthropic's usage counters, as it reports them: input_tokens leaves out the cache reads and
 * writes, which it counts apart. Null: not reported (yet).
 */
interface AnthropicCounts {
  input: number | null;
  cacheWrite: number | null;
  cacheRead: number | null;
  output: number | null;
  thinking: number | null;
}

const noCounts = (): AnthropicCounts => ({ input: null, cacheWrite: null, cacheRead: null, output: null, thinking: null });

/** A count the provider may leave out or send as null; anything else must be a count. */
function optionalCount(value: unknown, key: string): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) throw unreadableAnswer(`the usage's '${key}' is not a count.`);
  return value;
}

function readCounts(usage: unknown): AnthropicCounts {
  if (!isObject(usage)) throw unreadableAnswer("the usage is not an object.");
  const details = usage.output_tokens_details;
  if (details !== undefined && details !== null && !isObject(details)) throw unreadableAnswer("the usage's 'output_tokens_details' is not an object.");
  return {
    input: optionalCount(usage.input_tokens, "input_tokens"),
    cacheWrite: optionalCount(usage.cache_creation_input_tokens, "cache_creation_input_tokens"),
    cacheRead: optionalCount(usage.cache_read_input_tokens, "cache_read_input_tokens"),
    output: optionalCount(usage.output_tokens, "output_tokens"),
    thinking: details === undefined || details === null ? null : optionalCount(details.thinking_tokens, "thinking_tokens"),
  };
}

/** Later counters replace earlier ones: message_delta's are whole-message totals, never increments. */
function mergeCounts(earlier: AnthropicCounts, later: AnthropicCounts): AnthropicCounts {
  return {
    input: later.input ?? earlier.input,
    cacheWrite: later.cacheWrite ?? earlier.cacheWrite,
    cacheRead: later.cacheRead ?? earlier.cacheRead,
    output: later.output ?? earlier.output,
    thinking: later.thinking ?? earlier.thinking,
  };
}

/** Canonical usage: its input holds the cache reads and writes too. Null when nothing was counted. */
function countsToUsage(counts: AnthropicCounts): Usage | null {
  if (counts.input === null && counts.output === null && counts.cacheWrite === null && counts.cacheRead === null) return null;
  const cacheWrite = counts.cacheWrite ?? 0;
  const cacheRead = counts.cacheRead ?? 0;
  return {
    inputTokens: (counts.input ?? 0) + cacheWrite + cacheRead,
    outputTokens: counts.output ?? 0,
    cachedInputTokens: cacheRead,
    cacheWriteInputTokens: cacheWrite,
    reasoningTokens: counts.thinking ?? 0,
  };
}

/** A complete answer's usage: both main counts are required there. */
function readAnswerUsage(usage: unknown): Usage {
  const counts = readCounts(usage);
  if (counts.input === null || counts.output === null) throw unreadableAnswer("the usage has no 'input_tokens' or 'output_tokens' count.");
  return countsToUsage(counts)!;
}

/**
 * Anthropic's usage from canonical: input_tokens without the cache reads and writes (never below
 * 0, for a provider whose counts do not add up). Thinking tokens have no place in these four
 * fields; they are inside output_tokens.
 */
export function writeUsage(usage: Usage): Json {
  return {
    input_tokens: Math.max(0, usage.inputTokens - usage.cachedInputTokens - usage.cacheWriteInputTokens),
    cache_creation_input_tokens: usage.cacheWriteInputTokens,
    cache_read_input_tokens: usage.cachedInputTokens,
    output_tokens: usage.outputTokens,
  };
}

// Stop reasons

const stopReasonsRead: Record<string, StopReason> = {
  end_turn: "end",
  max_tokens: "max_tokens",
  stop_sequence: "stop_sequence",
  tool_use: "tool_use",
  refusal: "content_filter",
  // The server paused a long turn of its own tools; the caller could not have asked for those.
  pause_turn: "end",
  model_context_window_exceeded: "max_tokens",
};

function readStopReason(value: unknown): StopReason {
  if (value === null || value === undefined) return "end";
  const reason = typeof value === "string" && Object.hasOwn(stopReasonsRead, value) ? stopReasonsRead[value] : undefined;
  if (reason === undefined) throw unreadableAnswer(`the stop reason ${JSON.stringify(value)} is not one the gateway translates.`);
  return reason;
}

const stopReasonsWritten: Record<StopReason, string> = {
  end: "end_turn",
  max_tokens: "max_tokens",
  stop_sequence: "stop_sequence",
  tool_use: "tool_use",
  content_filter: "refusal",
};

function readStopSequence(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string") throw unreadableAnswer("the stop sequence is not a string.");
  return value;
}

// Answers

function requiredString(value: unknown, what: string): string {
  if (typeof value !== "string") throw unreadableAnswer(`${what} is not a string.`);
  return value;
}

/** Thinking is counted in usage, not shown: canonical answers carry text and tool calls only. */
const skippedBlocks = new Set(["thinking", "redacted_thinking"]);

/**
 * Any other block (a server tool's call or result) cannot be the answer to a translated request,
 * which asks for none; one arriving means the answer is not what the request asked for.
 */
const unexpectedBlock = (type: unknown) =>
  unreadableAnswer(`the content block type ${JSON.stringify(type)} is not one the gateway translates.`);

function toolInputJson(input: unknown): string {
  if (!isObject(input)) throw unreadableAnswer("a tool_use block's input is not an object.");
  const json = jsonText(input);
  if (json === null) throw unreadableAnswer("a tool_use block's input is nested too deeply.");
  return json;
}

function readContentBlock(block: unknown): AnswerPart | null {
  if (!isObject(block)) throw unreadableAnswer("a content block is not an object.");
  if (block.type === "text") return { type: "text", text: requiredString(block.text, "a text block's text") };
  if (block.type === "tool_use") {
    return {
      type: "tool_call",
      id: requiredString(block.id, "a tool_use block's id"),
      name: requiredString(block.name, "a tool_use block's name"),
      arguments: toolInputJson(block.input),
    };
  }
  if (typeof block.type === "string" && skippedBlocks.has(block.type)) return null;
  throw unexpectedBlock(block.type);
}

export function readMessagesAnswer(body: unknown, now: number): CanonicalAnswer {
  if (!isObject(body) || body.type !== "message") throw unreadableAnswer("it is not a message object.");
  if (!Array.isArray(body.content)) throw unreadableAnswer("the message's content is not an array.");
  const content: AnswerPart[] = [];
  for (const block of body.content) {
    const part = readContentBlock(block);
    if (part !== null) content.push(part);
  }
  return {
    id: requiredString(body.id, "the message's id"),
    model: requiredString(body.model, "the message's model"),
    created: now,
    content,
    stopReason: readStopReason(body.stop_reason),
    stopSequence: readStopSequence(body.stop_sequence),
    usage: readAnswerUsage(body.usage),
  };
}

/** A canonical tool call's arguments as Anthropic's input, which must be a JSON object; null when not. */
export function toolInput(argumentsJson: string): Json | null {
  try {
    const input: unknown = JSON.parse(argumentsJson);
    return isObject(input) ? input : null;
  } catch {
    return null;
  }
}

function writeAnswerPart(part: AnswerPart): Json {
  if (part.type === "text") return { type: "text", text: part.text };
  const input = toolInput(part.arguments);
  // An empty input would run the tool with arguments the model never gave.
  if (input === null) throw unreadableAnswer("a tool call's arguments are not a JSON object.");
  return { type: "tool_use", id: part.id, name: part.name, input };
}

export function writeMessagesAnswer(answer: CanonicalAnswer): Json {
  return {
    id: answer.id,
    type: "message",
    role: "assistant",
    model: answer.model,
    content: answer.content.map(writeAnswerPart),
    stop_reason: stopReasonsWritten[answer.stopReason],
    stop_sequence: answer.stopSequence,
    usage: writeUsage(answer.usage),
  };
}

// Stream reader

/** What became of a provider block: a canonical block by its index, or skipped (thinking). */
type BlockFate = { index: number; kind: "text" | "tool_call" } | "skipped";

class MessagesStreamReader implements StreamReader {
  readonly #now: number;
  #started = false;
  #stopped = false;
  /** Provider block index to its fate; the provider numbers thinking blocks too. */
  readonly #blocks = new Map<number, BlockFate>();
  #nextIndex = 0;
  #counts = noCounts();
  #stopReason: StopReason = "end";
  #stopSequence: string | null = null;

  constructor(now: number) {
    this.#now = now;
  }

  read(event: SseEvent): StreamEvent[] {
    if (this.#stopped) return [];
    const parsed = event.json;
    const data = parsed.kind === "json" && isObject(parsed.value) ? parsed.value : null;
    const name = event.name ?? (data !== null && typeof data.type === "string" ? data.type : null);
    switch (name) {
      case "message_start":
        return this.#messageStart(this.#data(data, name));
      case "content_block_start":
        return this.#blockStart(this.#data(data, name));
      case "content_block_delta":
        return this.#blockDelta(this.#data(data, name));
      case "content_block_stop":
        return this.#blockStop(this.#data(data, name));
      case "message_delta":
        this.#messageDelta(this.#data(data, name));
        return [];
      case "message_stop":
        this.#data(data, name);
        return this.#messageStop();
      case "error":
        throw this.#error(data);
      default:
        // ping, and event types added after this was written: nothing to translate.
        return [];
    }
  }

  end(): StreamEvent[] {
    if (!this.#stopped) throw new UpstreamConnectionError("ERR_STREAM_INCOMPLETE", "body");
    return [];
  }

  /** An event's data, which must be a JSON object, and which must follow message_start. */
  #data(data: Json | null, name: string): Json {
    if (data === null) throw unreadableAnswer(`a '${name}' event's data is not a JSON object.`);
    if (name !== "message_start" && !this.#started) throw unreadableAnswer(`a '${name}' event came before 'message_start'.`);
    return data;
  }

  #messageStart(data: Json): StreamEvent[] {
    if (this.#started) throw unreadableAnswer("a second 'message_start' event came.");
    this.#started = true;
    const message = data.message;
    if (!isObject(message)) throw unreadableAnswer("a 'message_start' event has no message.");
    if (message.usage !== undefined && message.usage !== null) this.#counts = readCounts(message.usage);
    return [
      {
        type: "start",
        id: requiredString(message.id, "the message's id"),
        model: requiredString(message.model, "the message's model"),
        created: this.#now,
        usage: countsToUsage(this.#counts),
      },
    ];
  }

  #providerIndex(data: Json): number {
    const index = data.index;
    if (typeof index !== "number" || !Number.isInteger(index)) throw unreadableAnswer("a content block event has no index.");
    return index;
  }

  #blockStart(data: Json): StreamEvent[] {
    const providerIndex = this.#providerIndex(data);
    if (this.#blocks.has(providerIndex)) throw unreadableAnswer(`the content block ${providerIndex} was started twice.`);
    const block = data.content_block;
    if (!isObject(block)) throw unreadableAnswer("a 'content_block_start' event has no content block.");
    if (typeof block.type === "string" && skippedBlocks.has(block.type)) {
      this.#blocks.set(providerIndex, "skipped");
      return [];
    }
    const index = this.#nextIndex;
    if (block.type === "text") {
      this.#open(providerIndex, index, "text");
      const text = requiredString(block.text, "a text block's text");
      const events: StreamEvent[] = [{ type: "block_start", index, block: { type: "text" } }];
      if (text !== "") events.push({ type: "text_delta", index, text });
      return events;
    }
    if (block.type === "tool_use") {
      const id = requiredString(block.id, "a tool_use block's id");
      const name = requiredString(block.name, "a tool_use block's name");
      this.#open(providerIndex, index, "tool_call");
      const events: StreamEvent[] = [{ type: "block_start", index, block: { type: "tool_call", id, name } }];
      // The input normally comes as input_json_delta pieces, from an empty object here.
      const input = block.input === undefined || block.input === null ? {} : block.input;
      if (isObject(input) && Object.keys(input).length === 0) return events;
      events.push({ type: "arguments_delta", index, json: toolInputJson(input) });
      return events;
    }
    throw unexpectedBlock(block.type);
  }

  #open(providerIndex: number, index: number, kind: "text" | "tool_call"): void {
    this.#blocks.set(providerIndex, { index, kind });
    this.#nextIndex = index + 1;
  }

  #fate(data: Json, name: string): BlockFate {
    const providerIndex = this.#providerIndex(data);
    const fate = this.#blocks.get(providerIndex);
    if (fate === undefined) throw unreadableAnswer(`a '${name}' event came for the content block ${providerIndex}, which was not started.`);
    return fate;
  }

  #blockDelta(data: Json): StreamEvent[] {
    const fate = this.#fate(data, "content_block_delta");
    if (fate === "skipped") return [];
    const delta = data.delta;
    if (!isObject(delta)) throw unreadableAnswer("a 'content_block_delta' event has no delta.");
    if (delta.type === "text_delta" && fate.kind === "text") {
      return [{ type: "text_delta", index: fate.index, text: requiredString(delta.text, "a text delta's text") }];
    }
    if (delta.type === "input_json_delta" && fate.kind === "tool_call") {
      const json = requiredString(delta.partial_json, "an input_json_delta's partial_json");
      return json === "" ? [] : [{ type: "arguments_delta", index: fate.index, json }];
    }
    // Citations point into documents only Anthropic's side has; canonical text has no place for them.
    if (delta.type === "citations_delta" && fate.kind === "text") return [];
    throw unreadableAnswer(`a ${JSON.stringify(delta.type)} delta came for a ${fate.kind === "text" ? "text" : "tool_use"} block.`);
  }

  #blockStop(data: Json): StreamEvent[] {
    const fate = this.#fate(data, "content_block_stop");
    return fate === "skipped" ? [] : [{ type: "block_stop", index: fate.index }];
  }

  #messageDelta(data: Json): void {
    const delta = data.delta;
    if (!isObject(delta)) throw unreadableAnswer("a 'message_delta' event has no delta.");
    this.#stopReason = readStopReason(delta.stop_reason);
    this.#stopSequence = readStopSequence(delta.stop_sequence);
    if (data.usage !== undefined && data.usage !== null) this.#counts = mergeCounts(this.#counts, readCounts(data.usage));
  }

  #messageStop(): StreamEvent[] {
    this.#stopped = true;
    return [{ type: "stop", stopReason: this.#stopReason, stopSequence: this.#stopSequence, usage: countsToUsage(this.#counts) }];
  }

  #error(data: Json | null): Error {
    const error = data !== null && isObject(data.error) ? data.error : null;
    const message = error !== null && typeof error.message === "string" ? error.message : "The provider's stream failed.";
    return providerErrorToGatewayError(500, message);
  }
}

export const messagesStreamReader = (now: number): StreamReader => new MessagesStreamReader(now);

// Stream writer

const sse = (type: string, data: Json): string => `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;

const zeroUsage = (): Json => ({ input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 });

function writeBlockStart(event: Extract<StreamEvent, { type: "block_start" }>): string {
  const block: Json =
    event.block.type === "text"
      ? { type: "text", text: "" }
      : { type: "tool_use", id: event.block.id, name: event.block.name, input: {} };
  return sse("content_block_start", { type: "content_block_start", index: event.index, content_block: block });
}

class MessagesStreamWriter implements StreamWriter {
  /** The usage message_start carried: message_delta repeats it when the stop brings none. */
  #startUsage: Json | null = null;

  write(event: StreamEvent): string {
    switch (event.type) {
      case "start":
        return this.#start(event);
      case "block_start":
        return writeBlockStart(event);
      case "text_delta":
        return sse("content_block_delta", { type: "content_block_delta", index: event.index, delta: { type: "text_delta", text: event.text } });
      case "arguments_delta":
        return sse("content_block_delta", {
          type: "content_block_delta",
          index: event.index,
          delta: { type: "input_json_delta", partial_json: event.json },
        });
      case "block_stop":
        return sse("content_block_stop", { type: "content_block_stop", index: event.index });
      case "stop":
        return this.#stop(event);
    }
  }

  error(message: string): string {
    return streamErrorEvent("messages", message).toString("utf8");
  }

  #start(event: Extract<StreamEvent, { type: "start" }>): string {
    this.#startUsage = event.usage === null ? null : writeUsage(event.usage);
    const message: Json = {
      id: event.id,
      type: "message",
      role: "assistant",
      model: event.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: this.#startUsage ?? zeroUsage(),
    };
    return sse("message_start", { type: "message_start", message });
  }

  /**
   * message_delta carries every counter, input included: the official SDK takes each non-null one
   * as the whole message's total, so input counted only at the end (chat, responses) still lands.
   */
  #stop(event: Extract<StreamEvent, { type: "stop" }>): string {
    const usage = event.usage === null ? (this.#startUsage ?? zeroUsage()) : writeUsage(event.usage);
    const delta = { stop_reason: stopReasonsWritten[event.stopReason], stop_sequence: event.stopSequence };
    return sse("message_delta", { type: "message_delta", delta, usage }) + sse("message_stop", { type: "message_stop" });
  }
}

export const messagesStreamWriter = (): StreamWriter => new MessagesStreamWriter();
