/**
 * OpenAI's responses format, its answers: the Response object (which a non-streamed answer is,
 * and which a stream's lifecycle events carry), its usage and status, and the stream's reader
 * and writer. The requests are in responses.ts.
 */
import { providerErrorToGatewayError, unreadableAnswer } from "../dataplane/errors.ts";
import { UpstreamConnectionError } from "../providers/errors.ts";
import { streamErrorEvent, type SseEvent } from "../providers/sse.ts";
import type { StopReason, StreamEvent, Usage } from "./canonical.ts";
import { count, detailCount, isObject, type Json } from "./fields.ts";
import type { StreamReader, StreamWriter } from "./format.ts";

// Usage

/**
 * OpenAI's usage as canonical usage: input_tokens already holds the cached and cache-write tokens,
 * output_tokens the reasoning ones, so they are taken as they are. Null: the provider sent none.
 */
export function readUsage(usage: unknown): Usage | null {
  if (usage === undefined || usage === null) return null;
  if (!isObject(usage)) throw unreadableAnswer("the usage is not an object.");
  const inputTokens = count(usage.input_tokens);
  const outputTokens = count(usage.output_tokens);
  if (inputTokens === null || outputTokens === null) throw unreadableAnswer("the usage has no 'input_tokens' or 'output_tokens' count.");
  return {
    inputTokens,
    outputTokens,
    cachedInputTokens: detailCount(usage.input_tokens_details, "cached_tokens"),
    cacheWriteInputTokens: detailCount(usage.input_tokens_details, "cache_write_tokens"),
    reasoningTokens: detailCount(usage.output_tokens_details, "reasoning_tokens"),
  };
}

/** Keys in the order of OpenAI's ResponseUsage, as the project's fake OpenAI writes them. */
export function writeUsage(usage: Usage): Json {
  return {
    input_tokens: usage.inputTokens,
    input_tokens_details: { cached_tokens: usage.cachedInputTokens, cache_write_tokens: usage.cacheWriteInputTokens },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens },
    total_tokens: usage.inputTokens + usage.outputTokens,
  };
}

// Status and stop reason

/** A failed response: the provider's own message, as a 502. */
function failed(response: Json): Error {
  const message = isObject(response.error) && typeof response.error.message === "string" ? response.error.message : null;
  return providerErrorToGatewayError(500, message ?? "The provider's response failed.");
}

/**
 * Why the model stopped, from a finished Response. A completed one that called a function waits
 * for its results; OpenAI says so only by the function_call items in its output.
 */
export function readStopReason(response: Json, calledTools: boolean): StopReason {
  switch (response.status) {
    case "completed":
      return calledTools ? "tool_use" : "end";
    case "incomplete": {
      const reason = isObject(response.incomplete_details) ? response.incomplete_details.reason : undefined;
      if (reason === "max_output_tokens") return "max_tokens";
      if (reason === "content_filter") return "content_filter";
      throw unreadableAnswer(`the response is incomplete for a reason the gateway does not translate (${JSON.stringify(reason ?? null)}).`);
    }
    case "failed":
      throw failed(response);
    default:
      throw unreadableAnswer(`the response's status is ${JSON.stringify(response.status ?? null)}, not a finished one.`);
  }
}

type WireStatus = "in_progress" | "completed" | "incomplete";

function statusFor(stopReason: StopReason): { status: WireStatus; incompleteReason: string | null } {
  if (stopReason === "max_tokens") return { status: "incomplete", incompleteReason: "max_output_tokens" };
  if (stopReason === "content_filter") return { status: "incomplete", incompleteReason: "content_filter" };
  return { status: "completed", incompleteReason: null };
}

// The Response object

export interface ResponseFields {
  id: string;
  model: string;
  created: number;
  status: WireStatus;
  incompleteReason: string | null;
  output: Json[];
  usage: Usage | null;
}

/**
 * A Response as it travels on the wire, with the fields and key order of the project's fake
 * OpenAI (test/support/fake-providers/openai.ts). The fields that echo the request (instructions,
 * tools, temperature…) are fixed: the writer does not see the request, and the official SDK reads
 * none of them back. `completed_at` is the answer's own time: the gateway knows no other.
 */
export function wireResponse(r: ResponseFields): Json {
  return {
    id: r.id,
    object: "response",
    created_at: r.created,
    status: r.status,
    background: false,
    completed_at: r.status === "completed" ? r.created : null,
    error: null,
    incomplete_details: r.incompleteReason === null ? null : { reason: r.incompleteReason },
    instructions: null,
    max_output_tokens: null,
    model: r.model,
    output: r.output,
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    service_tier: "default",
    temperature: null,
    text: { format: { type: "text" } },
    tool_choice: "auto",
    tools: [],
    top_p: null,
    truncation: "disabled",
    usage: r.usage === null ? null : writeUsage(r.usage),
    metadata: {},
    access_programs: null,
  };
}

export const outputText = (text: string): Json => ({ type: "output_text", annotations: [], logprobs: [], text });

export const messageItem = (id: string, status: WireStatus, content: Json[]): Json => ({
  id,
  type: "message",
  status,
  role: "assistant",
  content,
});

export const functionCallItem = (callId: string, name: string, args: string, status: "in_progress" | "completed"): Json => ({
  id: `fc_${callId}`,
  type: "function_call",
  status,
  arguments: args,
  call_id: callId,
  name,
});

/** The Response that ends an answer: its status follows the stop reason. */
export function finishedResponse(r: Omit<ResponseFields, "status" | "incompleteReason">, stopReason: StopReason): Json {
  const status = statusFor(stopReason);
  return wireResponse({ ...r, output: status.status === "incomplete" ? cutShort(r.output) : r.output, ...status });
}

/** An answer cut short: OpenAI marks the message item it was writing `incomplete` too. */
function cutShort(output: readonly Json[]): Json[] {
  const last = output.at(-1);
  if (last === undefined || last.type !== "message") return [...output];
  return [...output.slice(0, -1), { ...last, status: "incomplete" }];
}

// Stream reader

/** What an output item of the provider's stream became. */
type ReadItem = { kind: "message" } | { kind: "function_call"; index: number } | { kind: "skipped" };

const str = (value: unknown): string | null => (typeof value === "string" ? value : null);
const outputIndex = (data: Json): number => (typeof data.output_index === "number" ? data.output_index : -1);

/**
 * OpenAI's stream events as canonical ones. Each content part of a message item (output_text or
 * refusal) is a text block, each function_call item a tool_call block; reasoning items and their
 * events take no index. Events the canonical stream has no use for (in_progress, the *.done
 * events that repeat what the deltas said, annotations) give nothing.
 */
export class ResponsesStreamReader implements StreamReader {
  readonly #now: number;
  #started = false;
  #stopped = false;
  #nextIndex = 0;
  #calledTools = false;
  /** By the provider's output_index. */
  readonly #items = new Map<number, ReadItem>();
  /** Open text blocks, by "<output_index>:<content_index>". */
  readonly #parts = new Map<string, number>();
  /** Open function_call blocks, by output_index. */
  readonly #calls = new Map<number, number>();

  constructor(now: number) {
    this.#now = now;
  }

  read(event: SseEvent): StreamEvent[] {
    const parsed = event.json;
    if (parsed.kind === "none") return [];
    if (parsed.kind === "malformed") throw unreadableAnswer("a stream event's data is not JSON.");
    const data = parsed.value;
    if (!isObject(data)) throw unreadableAnswer("a stream event's data is not a JSON object.");
    const type = str(data.type) ?? event.name;
    if (type === "error") throw providerErrorToGatewayError(500, errorMessage(data));
    if (this.#stopped) return [];
    if (type === "response.created") return this.#start(data);
    if (type === "response.failed") throw failed(isObject(data.response) ? data.response : {});
    if (!this.#started) {
      // Only the lifecycle events that carry nothing may precede response.created.
      if (type === "response.queued" || type === "response.in_progress" || type === "keepalive") return [];
      throw unreadableAnswer(`the stream's '${type ?? "(unnamed)"}' event came before 'response.created'.`);
    }
    switch (type) {
      case "response.output_item.added":
        return this.#itemAdded(data);
      case "response.content_part.added":
        return this.#partAdded(data);
      case "response.output_text.delta":
      case "response.refusal.delta":
        return this.#textDelta(data);
      case "response.content_part.done":
        return this.#partDone(data);
      case "response.function_call_arguments.delta":
        return this.#argumentsDelta(data);
      case "response.output_item.done":
        return this.#itemDone(data);
      case "response.completed":
      case "response.incomplete":
        return this.#stop(data);
      default:
        return [];
    }
  }

  end(): StreamEvent[] {
    if (!this.#stopped) throw new UpstreamConnectionError("ERR_STREAM_INCOMPLETE", "body");
    return [];
  }

  #start(data: Json): StreamEvent[] {
    if (this.#started) return [];
    const response = data.response;
    if (!isObject(response) || typeof response.id !== "string" || typeof response.model !== "string") {
      throw unreadableAnswer("the stream's 'response.created' event carries no response id and model.");
    }
    this.#started = true;
    const created = typeof response.created_at === "number" ? response.created_at : this.#now;
    return [{ type: "start", id: response.id, model: response.model, created, usage: null }];
  }

  #itemAdded(data: Json): StreamEvent[] {
    const item = data.item;
    const at = outputIndex(data);
    if (!isObject(item)) throw unreadableAnswer("a stream's 'response.output_item.added' event carries no item.");
    if (item.type === "message") {
      this.#items.set(at, { kind: "message" });
      return [];
    }
    if (item.type === "reasoning") {
      this.#items.set(at, { kind: "skipped" });
      return [];
    }
    if (item.type !== "function_call") {
      throw unreadableAnswer(`the stream's output item type ${JSON.stringify(item.type ?? null)} is not one the gateway translates.`);
    }
    const callId = str(item.call_id);
    const name = str(item.name);
    if (callId === null || name === null) throw unreadableAnswer("a stream's function_call item has no call_id or name.");
    const index = this.#nextIndex++;
    this.#calledTools = true;
    this.#items.set(at, { kind: "function_call", index });
    this.#calls.set(at, index);
    const events: StreamEvent[] = [{ type: "block_start", index, block: { type: "tool_call", id: callId, name } }];
    const args = str(item.arguments);
    if (args !== null && args !== "") events.push({ type: "arguments_delta", index, json: args });
    return events;
  }

  /** Whether an event is about a message item (true) or a skipped reasoning item (false). */
  #inMessage(data: Json): boolean {
    const item = this.#items.get(outputIndex(data));
    if (item?.kind === "skipped") return false;
    if (item?.kind !== "message") throw unreadableAnswer(`a stream's '${String(data.type)}' event names no message item.`);
    return true;
  }

  #partAdded(data: Json): StreamEvent[] {
    if (!this.#inMessage(data)) return [];
    const part = data.part;
    if (!isObject(part) || (part.type !== "output_text" && part.type !== "refusal")) {
      const partType = isObject(part) ? part.type : undefined;
      throw unreadableAnswer(`the stream's content part type ${JSON.stringify(partType ?? null)} is not one the gateway translates.`);
    }
    const index = this.#nextIndex++;
    this.#parts.set(partKey(data), index);
    const events: StreamEvent[] = [{ type: "block_start", index, block: { type: "text" } }];
    const initial = str(part.type === "refusal" ? part.refusal : part.text);
    if (initial !== null && initial !== "") events.push({ type: "text_delta", index, text: initial });
    return events;
  }

  #openPart(data: Json): number | null {
    if (!this.#inMessage(data)) return null;
    const index = this.#parts.get(partKey(data));
    if (index === undefined) throw unreadableAnswer(`a stream's '${String(data.type)}' event names no open content part.`);
    return index;
  }

  #textDelta(data: Json): StreamEvent[] {
    const index = this.#openPart(data);
    if (index === null) return [];
    const text = str(data.delta);
    if (text === null) throw unreadableAnswer(`a stream's '${String(data.type)}' event has no text delta.`);
    return [{ type: "text_delta", index, text }];
  }

  #partDone(data: Json): StreamEvent[] {
    const index = this.#openPart(data);
    if (index === null) return [];
    this.#parts.delete(partKey(data));
    return [{ type: "block_stop", index }];
  }

  #argumentsDelta(data: Json): StreamEvent[] {
    const index = this.#calls.get(outputIndex(data));
    if (index === undefined) throw unreadableAnswer("a stream's 'response.function_call_arguments.delta' event names no open function call.");
    const json = str(data.delta);
    if (json === null) throw unreadableAnswer("a stream's 'response.function_call_arguments.delta' event has no delta.");
    return [{ type: "arguments_delta", index, json }];
  }

  #itemDone(data: Json): StreamEvent[] {
    const at = outputIndex(data);
    const index = this.#calls.get(at);
    if (index === undefined) return [];
    this.#calls.delete(at);
    return [{ type: "block_stop", index }];
  }

  #stop(data: Json): StreamEvent[] {
    const response = data.response;
    if (!isObject(response)) throw unreadableAnswer(`the stream's '${String(data.type)}' event carries no response.`);
    const calledTools = this.#calledTools || (Array.isArray(response.output) && response.output.some((item) => isObject(item) && item.type === "function_call"));
    const stopReason = readStopReason(response, calledTools);
    const usage = readUsage(response.usage);
    // Blocks the provider left open end here, so that every canonical block is closed before stop.
    const open = [...this.#parts.values(), ...this.#calls.values()].sort((a, b) => a - b);
    this.#parts.clear();
    this.#calls.clear();
    this.#stopped = true;
    const events: StreamEvent[] = open.map((index) => ({ type: "block_stop", index }));
    events.push({ type: "stop", stopReason, stopSequence: null, usage });
    return events;
  }
}

const partKey = (data: Json): string => `${outputIndex(data)}:${typeof data.content_index === "number" ? data.content_index : -1}`;

/** An `error` event's message: OpenAI's is flat; some providers nest it under `error`. */
function errorMessage(data: Json): string {
  if (typeof data.message === "string") return data.message;
  if (isObject(data.error) && typeof data.error.message === "string") return data.error.message;
  return "The provider's stream failed.";
}

// Stream writer

type WrittenBlock =
  | { kind: "text"; itemId: string; text: string }
  | { kind: "tool_call"; itemId: string; callId: string; name: string; args: string };

/**
 * Canonical events as OpenAI's stream events. Each canonical block is its own output item, at
 * output_index = the block's index: a text block is a message item with one output_text part, a
 * tool call a function_call item. The closing events repeat the item whole, so the writer keeps
 * each block's text or arguments so far, and the items, for the final Response.
 */
export class ResponsesStreamWriter implements StreamWriter {
  #sequence = 0;
  #id = "";
  #model = "";
  #created = 0;
  readonly #blocks = new Map<number, WrittenBlock>();
  /** The output items so far, by output_index, as the last event wrote each. */
  readonly #output: Json[] = [];

  write(event: StreamEvent): string {
    switch (event.type) {
      case "start":
        return this.#start(event.id, event.model, event.created);
      case "block_start":
        return event.block.type === "text" ? this.#textStart(event.index) : this.#callStart(event.index, event.block.id, event.block.name);
      case "text_delta":
        return this.#textDelta(event.index, event.text);
      case "arguments_delta":
        return this.#argumentsDelta(event.index, event.json);
      case "block_stop":
        return this.#blockStop(event.index);
      case "stop":
        return this.#stop(event.stopReason, event.usage);
    }
  }

  error(message: string): string {
    return streamErrorEvent("responses", message, this.#sequence++).toString("utf8");
  }

  #event(type: string, fields: Json): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.#sequence++, ...fields })}\n\n`;
  }

  /** What response.created and response.in_progress carry: nothing answered yet. */
  #snapshot(): Json {
    return wireResponse({ id: this.#id, model: this.#model, created: this.#created, status: "in_progress", incompleteReason: null, output: [], usage: null });
  }

  #start(id: string, model: string, created: number): string {
    this.#id = id;
    this.#model = model;
    this.#created = created;
    return this.#event("response.created", { response: this.#snapshot() }) + this.#event("response.in_progress", { response: this.#snapshot() });
  }

  #textStart(index: number): string {
    const itemId = `msg_${index}_${this.#id}`;
    this.#blocks.set(index, { kind: "text", itemId, text: "" });
    const item = messageItem(itemId, "in_progress", []);
    this.#output[index] = item;
    return (
      this.#event("response.output_item.added", { output_index: index, item }) +
      this.#event("response.content_part.added", { item_id: itemId, output_index: index, content_index: 0, part: outputText("") })
    );
  }

  #callStart(index: number, callId: string, name: string): string {
    const item = functionCallItem(callId, name, "", "in_progress");
    this.#blocks.set(index, { kind: "tool_call", itemId: `fc_${callId}`, callId, name, args: "" });
    this.#output[index] = item;
    return this.#event("response.output_item.added", { output_index: index, item });
  }

  #block<K extends WrittenBlock["kind"]>(index: number, kind: K): Extract<WrittenBlock, { kind: K }> {
    const block = this.#blocks.get(index);
    // The canonical stream is in order (readers guarantee it): anything else is a gateway bug.
    if (block?.kind !== kind) throw new Error(`responses stream writer: no open ${kind} block at index ${index}`);
    return block as Extract<WrittenBlock, { kind: K }>;
  }

  #textDelta(index: number, text: string): string {
    const block = this.#block(index, "text");
    block.text += text;
    return this.#event("response.output_text.delta", { item_id: block.itemId, output_index: index, content_index: 0, delta: text, logprobs: [] });
  }

  #argumentsDelta(index: number, json: string): string {
    const block = this.#block(index, "tool_call");
    block.args += json;
    return this.#event("response.function_call_arguments.delta", { item_id: block.itemId, output_index: index, delta: json });
  }

  #blockStop(index: number): string {
    const block = this.#blocks.get(index);
    if (block === undefined) throw new Error(`responses stream writer: no open block at index ${index}`);
    this.#blocks.delete(index);
    if (block.kind === "text") {
      const where = { item_id: block.itemId, output_index: index, content_index: 0 };
      const item = messageItem(block.itemId, "completed", [outputText(block.text)]);
      this.#output[index] = item;
      return (
        this.#event("response.output_text.done", { ...where, text: block.text, logprobs: [] }) +
        this.#event("response.content_part.done", { ...where, part: outputText(block.text) }) +
        this.#event("response.output_item.done", { output_index: index, item })
      );
    }
    const item = functionCallItem(block.callId, block.name, block.args, "completed");
    this.#output[index] = item;
    return (
      this.#event("response.function_call_arguments.done", { item_id: block.itemId, output_index: index, arguments: block.args, name: block.name }) +
      this.#event("response.output_item.done", { output_index: index, item })
    );
  }

  #stop(stopReason: StopReason, usage: Usage | null): string {
    const response = finishedResponse({ id: this.#id, model: this.#model, created: this.#created, output: [...this.#output], usage }, stopReason);
    return this.#event(response.status === "completed" ? "response.completed" : "response.incomplete", { response });
  }
}
