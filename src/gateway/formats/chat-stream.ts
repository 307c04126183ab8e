/**
 * OpenAI's chat completions format, its answers: the ChatCompletion object, its usage and finish
 * reasons, and the stream of ChatCompletionChunk objects (reader and writer). The requests are in
 * chat.ts.
 */
import { providerErrorToGatewayError, unreadableAnswer } from "../dataplane/errors.ts";
import { UpstreamConnectionError } from "../providers/errors.ts";
import type { SseEvent } from "../providers/sse.ts";
import type { AnswerPart, CanonicalAnswer, CanonicalRequest, StopReason, StreamEvent, Usage } from "./canonical.ts";
import { noUsage } from "./canonical.ts";
import { count, detailCount, isObject, type Json, present } from "./fields.ts";
import type { StreamReader, StreamWriter } from "./format.ts";

// Usage

/**
 * Chat's usage as canonical usage: prompt_tokens already holds the cached tokens and
 * completion_tokens the reasoning ones, so they are taken as they are. Null: the provider sent none.
 */
export function readChatUsage(usage: unknown): Usage | null {
  if (!present(usage)) return null;
  if (!isObject(usage)) throw unreadableAnswer("the usage is not an object.");
  const inputTokens = count(usage.prompt_tokens);
  const outputTokens = count(usage.completion_tokens);
  if (inputTokens === null || outputTokens === null) throw unreadableAnswer("the usage has no 'prompt_tokens' or 'completion_tokens' count.");
  return {
    inputTokens,
    outputTokens,
    cachedInputTokens: detailCount(usage.prompt_tokens_details, "cached_tokens"),
    cacheWriteInputTokens: detailCount(usage.prompt_tokens_details, "cache_write_tokens"),
    reasoningTokens: detailCount(usage.completion_tokens_details, "reasoning_tokens"),
  };
}

/** Keys in the order of OpenAI's CompletionUsage as its API writes them. */
export function writeChatUsage(usage: Usage): Json {
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedInputTokens, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: usage.reasoningTokens, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}

// Finish reasons

/** A finish reason that is there (not null) as canonical. */
function readFinishReason(reason: unknown): StopReason {
  switch (reason) {
    case "stop":
      return "end";
    case "length":
      return "max_tokens";
    case "tool_calls":
    // The legacy name of the same thing.
    case "function_call":
      return "tool_use";
    case "content_filter":
      return "content_filter";
  }
  throw unreadableAnswer(`the finish reason ${JSON.stringify(reason)} is not one of chat completions'.`);
}

/** Chat does not say which stop sequence ended the answer: both are "stop". */
function writeFinishReason(reason: StopReason): string {
  switch (reason) {
    case "end":
    case "stop_sequence":
      return "stop";
    case "max_tokens":
      return "length";
    case "tool_use":
      return "tool_calls";
    case "content_filter":
      return "content_filter";
  }
}

// Answers

function answerToolCall(value: unknown): AnswerPart {
  if (!isObject(value) || !isObject(value.function)) throw unreadableAnswer("a tool call is not an object with a 'function'.");
  // Compatible servers sometimes leave the type out; what is there must be a function call.
  if (present(value.type) && value.type !== "function") throw unreadableAnswer(`a tool call is of type ${JSON.stringify(value.type)}, not 'function'.`);
  const { id } = value;
  const { name, arguments: args } = value.function;
  if (typeof id !== "string" || typeof name !== "string" || typeof args !== "string") {
    throw unreadableAnswer("a tool call has no string 'id', 'function.name' or 'function.arguments'.");
  }
  return { type: "tool_call", id, name, arguments: args };
}

function optionalText(value: unknown, field: string): string | null {
  if (!present(value)) return null;
  if (typeof value !== "string") throw unreadableAnswer(`the message's '${field}' is not a string.`);
  return value;
}

/** The message's text, then its refusal (as text), then its tool calls. */
function answerContent(message: Json): AnswerPart[] {
  const parts: AnswerPart[] = [];
  for (const field of ["content", "refusal"]) {
    const text = optionalText(message[field], field);
    if (text !== null && text !== "") parts.push({ type: "text", text });
  }
  if (present(message.tool_calls)) {
    if (!Array.isArray(message.tool_calls)) throw unreadableAnswer("the message's 'tool_calls' is not an array.");
    for (const call of message.tool_calls) parts.push(answerToolCall(call));
  }
  return parts;
}

/** `what`: the answer or the stream's first chunk, as the error names it. */
function header(body: Json, now: number, what: string): { id: string; model: string; created: number } {
  if (typeof body.id !== "string" || typeof body.model !== "string") throw unreadableAnswer(`${what} has no string 'id' or 'model'.`);
  return { id: body.id, model: body.model, created: count(body.created) ?? now };
}

/** A provider's ChatCompletion; only its first choice (the gateway never asks for more). */
export function readChatAnswer(body: unknown, now: number): CanonicalAnswer {
  if (!isObject(body)) throw unreadableAnswer("the answer is not a JSON object.");
  const { id, model, created } = header(body, now, "the answer");
  if (!Array.isArray(body.choices) || body.choices.length === 0) throw unreadableAnswer("the answer has no choices.");
  const choice: unknown = body.choices[0];
  if (!isObject(choice) || !isObject(choice.message)) throw unreadableAnswer("the answer's first choice has no message.");
  return {
    id,
    model,
    created,
    content: answerContent(choice.message),
    stopReason: present(choice.finish_reason) ? readFinishReason(choice.finish_reason) : "end",
    stopSequence: null,
    usage: readChatUsage(body.usage) ?? noUsage(),
  };
}

function writeToolCall(part: Extract<AnswerPart, { type: "tool_call" }>): Json {
  return { id: part.id, type: "function", function: { name: part.name, arguments: part.arguments } };
}

export function writeChatAnswer(answer: CanonicalAnswer): Json {
  const texts: string[] = [];
  const calls: Json[] = [];
  for (const part of answer.content) {
    if (part.type === "text") texts.push(part.text);
    else calls.push(writeToolCall(part));
  }
  const message: Json = { role: "assistant", content: texts.length > 0 ? texts.join("") : null, refusal: null, annotations: [] };
  if (calls.length > 0) message.tool_calls = calls;
  return {
    id: answer.id,
    object: "chat.completion",
    created: answer.created,
    model: answer.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: writeFinishReason(answer.stopReason) }],
    usage: writeChatUsage(answer.usage),
  };
}

// Stream reader

/** The canonical block open now; `chatIndex` and `id` for a tool call (chat's own index for it). */
type OpenBlock = { index: number; kind: "text" } | { index: number; kind: "tool"; chatIndex: number; id: string };

function streamErrorMessage(error: unknown): string {
  if (isObject(error) && typeof error.message === "string" && error.message.trim() !== "") return error.message;
  if (typeof error === "string" && error.trim() !== "") return error;
  return "The provider's stream failed.";
}

function chunkText(delta: Json, field: "content" | "refusal"): string {
  const text = delta[field];
  if (!present(text)) return "";
  if (typeof text !== "string") throw unreadableAnswer(`a chunk's 'delta.${field}' is not a string.`);
  return text;
}

class ChatStreamReader implements StreamReader {
  readonly #now: number;
  #started = false;
  #open: OpenBlock | null = null;
  #nextIndex = 0;
  #reason: StopReason | null = null;
  #usage: Usage | null = null;
  #done = false;

  constructor(now: number) {
    this.#now = now;
  }

  read(event: SseEvent): StreamEvent[] {
    if (this.#done || event.data === null) return [];
    if (event.data === "[DONE]") {
      if (this.#reason === null) throw unreadableAnswer("the stream ended without a finish reason.");
      return this.#finish();
    }
    const parsed = event.json;
    if (parsed.kind !== "json" || !isObject(parsed.value)) throw unreadableAnswer("a stream chunk is not a JSON object.");
    const chunk = parsed.value;
    if (present(chunk.error)) throw providerErrorToGatewayError(500, streamErrorMessage(chunk.error));
    const out: StreamEvent[] = [];
    if (!this.#started) out.push(this.#start(chunk));
    this.#choice(chunk, out);
    if (present(chunk.usage)) this.#usage = readChatUsage(chunk.usage);
    return out;
  }

  end(): StreamEvent[] {
    if (this.#done) return [];
    // A stream cut after its finish reason lost only the [DONE] (and perhaps the usage): the answer is whole.
    if (this.#reason !== null) return this.#finish();
    throw new UpstreamConnectionError("ERR_STREAM_INCOMPLETE", "body");
  }

  #start(chunk: Json): StreamEvent {
    this.#started = true;
    const { id, model, created } = header(chunk, this.#now, "the stream's first chunk");
    return { type: "start", id, model, created, usage: null };
  }

  /** The first choice's delta and finish reason (the gateway never asks for more than one). */
  #choice(chunk: Json, out: StreamEvent[]): void {
    if (!present(chunk.choices)) return;
    if (!Array.isArray(chunk.choices)) throw unreadableAnswer("a chunk's 'choices' is not an array.");
    const choice: unknown = chunk.choices[0];
    if (choice === undefined) return;
    if (!isObject(choice)) throw unreadableAnswer("a chunk's choice is not an object.");
    if (present(choice.delta)) {
      if (!isObject(choice.delta)) throw unreadableAnswer("a chunk's 'delta' is not an object.");
      this.#text(chunkText(choice.delta, "content") + chunkText(choice.delta, "refusal"), out);
      this.#toolCalls(choice.delta.tool_calls, out);
    }
    if (present(choice.finish_reason)) {
      this.#reason = readFinishReason(choice.finish_reason);
      this.#close(out);
    }
  }

  #text(text: string, out: StreamEvent[]): void {
    if (text === "") return;
    if (this.#open?.kind !== "text") {
      this.#close(out);
      this.#open = { index: this.#nextIndex++, kind: "text" };
      out.push({ type: "block_start", index: this.#open.index, block: { type: "text" } });
    }
    out.push({ type: "text_delta", index: this.#open.index, text });
  }

  #toolCalls(value: unknown, out: StreamEvent[]): void {
    if (!present(value)) return;
    if (!Array.isArray(value)) throw unreadableAnswer("a chunk's 'delta.tool_calls' is not an array.");
    value.forEach((item: unknown, position) => this.#toolCall(item, position, out));
  }

  #toolCall(item: unknown, position: number, out: StreamEvent[]): void {
    if (!isObject(item)) throw unreadableAnswer("a tool call delta is not an object.");
    const fn = present(item.function) ? item.function : {};
    if (!isObject(fn)) throw unreadableAnswer("a tool call delta's 'function' is not an object.");
    // OpenAI always numbers them; a server that does not sends one per entry.
    const chatIndex = present(item.index) ? item.index : position;
    if (typeof chatIndex !== "number" || !Number.isInteger(chatIndex)) throw unreadableAnswer("a tool call delta's 'index' is not an integer.");
    const args = present(fn.arguments) ? fn.arguments : "";
    if (typeof args !== "string") throw unreadableAnswer("a tool call delta's 'function.arguments' is not a string.");
    const open = this.#open;
    const continues = open?.kind === "tool" && open.chatIndex === chatIndex && (!present(item.id) || item.id === open.id);
    if (!continues) {
      if (!present(item.id)) throw unreadableAnswer("a tool call's arguments came for a call that is not the one being written.");
      this.#openToolCall(item.id, fn.name, chatIndex, out);
    }
    if (args !== "") out.push({ type: "arguments_delta", index: this.#open!.index, json: args });
  }

  #openToolCall(id: unknown, name: unknown, chatIndex: number, out: StreamEvent[]): void {
    if (typeof id !== "string" || typeof name !== "string") throw unreadableAnswer("a tool call's first delta has no string 'id' or 'function.name'.");
    this.#close(out);
    this.#open = { index: this.#nextIndex++, kind: "tool", chatIndex, id };
    out.push({ type: "block_start", index: this.#open.index, block: { type: "tool_call", id, name } });
  }

  #close(out: StreamEvent[]): void {
    if (this.#open === null) return;
    out.push({ type: "block_stop", index: this.#open.index });
    this.#open = null;
  }

  #finish(): StreamEvent[] {
    const out: StreamEvent[] = [];
    this.#close(out);
    out.push({ type: "stop", stopReason: this.#reason!, stopSequence: null, usage: this.#usage });
    this.#done = true;
    return out;
  }
}

export const chatStreamReader = (now: number): StreamReader => new ChatStreamReader(now);

// Stream writer

const sse = (data: Json | string): string => `data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;

/**
 * The in-stream error event of chat completions. OpenAI's API has none of its own; the official
 * SDK throws an APIError for any data line carrying `error`, so this is what a caller can catch.
 */
export function chatStreamError(message: string): string {
  return sse({ error: { message, type: "api_error", param: null, code: null } });
}

class ChatStreamWriter implements StreamWriter {
  readonly #streamUsage: boolean;
  #id = "";
  #model = "";
  #created = 0;
  /** What the start said of usage, for a stop that says nothing. */
  #startUsage: Usage | null = null;
  /** Canonical block index → the tool call's index in chat (its n-th call, from 0). */
  readonly #toolIndexes = new Map<number, number>();

  constructor(streamUsage: boolean) {
    this.#streamUsage = streamUsage;
  }

  write(event: StreamEvent): string {
    switch (event.type) {
      case "start":
        this.#id = event.id;
        this.#model = event.model;
        this.#created = event.created;
        this.#startUsage = event.usage;
        return this.#chunk({ role: "assistant", content: "", refusal: null });
      case "block_start":
        if (event.block.type === "text") return "";
        this.#toolIndexes.set(event.index, this.#toolIndexes.size);
        return this.#chunk({
          tool_calls: [{ index: this.#toolIndex(event.index), id: event.block.id, type: "function", function: { name: event.block.name, arguments: "" } }],
        });
      case "text_delta":
        return this.#chunk({ content: event.text });
      case "arguments_delta":
        return this.#chunk({ tool_calls: [{ index: this.#toolIndex(event.index), function: { arguments: event.json } }] });
      case "block_stop":
        return "";
      case "stop":
        return this.#stop(event.stopReason, event.usage);
    }
  }

  error(message: string): string {
    return chatStreamError(message);
  }

  #toolIndex(blockIndex: number): number {
    const index = this.#toolIndexes.get(blockIndex);
    if (index === undefined) throw new Error(`arguments for block ${blockIndex}, which is not a tool call`);
    return index;
  }

  /** As OpenAI writes them: `"usage": null` last on every chunk when the caller asked for usage. */
  #chunk(delta: Json, finishReason: string | null = null): string {
    const chunk: Json = {
      id: this.#id,
      object: "chat.completion.chunk",
      created: this.#created,
      model: this.#model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    };
    if (this.#streamUsage) chunk.usage = null;
    return sse(chunk);
  }

  #stop(reason: StopReason, usage: Usage | null): string {
    let text = this.#chunk({}, writeFinishReason(reason));
    if (this.#streamUsage) {
      const usageChunk = { id: this.#id, object: "chat.completion.chunk", created: this.#created, model: this.#model, choices: [], usage: writeChatUsage(usage ?? this.#startUsage ?? noUsage()) };
      text += sse(usageChunk);
    }
    return text + sse("[DONE]");
  }
}

export const chatStreamWriter = (request: Pick<CanonicalRequest, "streamUsage">): StreamWriter => new ChatStreamWriter(request.streamUsage);
