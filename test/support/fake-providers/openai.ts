/** OpenAI wire shapes (Responses, Embeddings, Images, Models), typed against the official SDK. Azure serves the same. */
import type OpenAI from "openai";
import { digest, FAKE_EPOCH_SECONDS, splitText, TINY_PNG_BASE64 } from "./common.ts";
import type { ToolCall } from "./tools.ts";

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** The error `type` OpenAI uses for a status. */
export function openaiErrorType(status: number): string {
  if (status === 429) return "requests";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

export function openaiError(status: number, message: string, type?: string, code?: string | null, param?: string | null): OpenAIErrorBody {
  return { error: { message, type: type ?? openaiErrorType(status), param: param ?? null, code: code ?? null } };
}

export interface ResponseSeed {
  /** Hex digest of the request. */
  hash: string;
  model: string;
  /** The answer's text, when it makes no tool call. */
  text: string;
  /** A function_call output item instead of a message. */
  call?: ToolCall;
  /** The request's function tools and tool_choice, echoed as the API echoes them; default none and "auto". */
  tools?: OpenAI.Responses.FunctionTool[];
  toolChoice?: OpenAI.Responses.Response["tool_choice"];
  events: number;
  inputTokens: number;
  outputTokens: number;
}

/**
 * A Response as it travels on the wire: without the SDK's computed `output_text`, and with
 * `usage: null` until the response is complete, as the real API sends it.
 */
export type WireResponse = Omit<OpenAI.Responses.Response, "output_text" | "usage"> & { usage: OpenAI.Responses.ResponseUsage | null };

/** A Responses stream event as it travels on the wire (its `response` snapshots are WireResponse). */
export type WireResponseStreamEvent =
  | (Omit<OpenAI.Responses.ResponseCreatedEvent, "response"> & { response: WireResponse })
  | (Omit<OpenAI.Responses.ResponseInProgressEvent, "response"> & { response: WireResponse })
  | (Omit<OpenAI.Responses.ResponseCompletedEvent, "response"> & { response: WireResponse })
  | OpenAI.Responses.ResponseOutputItemAddedEvent
  | OpenAI.Responses.ResponseContentPartAddedEvent
  | OpenAI.Responses.ResponseTextDeltaEvent
  | OpenAI.Responses.ResponseTextDoneEvent
  | OpenAI.Responses.ResponseContentPartDoneEvent
  | OpenAI.Responses.ResponseOutputItemDoneEvent
  | OpenAI.Responses.ResponseFunctionCallArgumentsDeltaEvent
  | OpenAI.Responses.ResponseFunctionCallArgumentsDoneEvent;

function ids(seed: ResponseSeed): { responseId: string; itemId: string } {
  const prefix = seed.call === undefined ? "msg" : "fc";
  return { responseId: `resp_${seed.hash.slice(0, 48)}`, itemId: `${prefix}_${digest("output-item", seed.hash).slice(0, 48)}` };
}

function functionCall(itemId: string, call: ToolCall, done: boolean): OpenAI.Responses.ResponseFunctionToolCall {
  return { id: itemId, type: "function_call", status: done ? "completed" : "in_progress", arguments: done ? call.arguments : "", call_id: call.id, name: call.name };
}

function outputText(text: string): OpenAI.Responses.ResponseOutputText {
  return { type: "output_text", annotations: [], logprobs: [], text };
}

function outputMessage(itemId: string, text: string | null): OpenAI.Responses.ResponseOutputMessage {
  return {
    id: itemId,
    type: "message",
    status: text === null ? "in_progress" : "completed",
    content: text === null ? [] : [outputText(text)],
    role: "assistant",
  };
}

function response(seed: ResponseSeed, done: boolean): WireResponse {
  const { responseId, itemId } = ids(seed);
  return {
    id: responseId,
    object: "response",
    created_at: FAKE_EPOCH_SECONDS,
    status: done ? "completed" : "in_progress",
    background: false,
    completed_at: done ? FAKE_EPOCH_SECONDS : null,
    error: null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: null,
    model: seed.model,
    output: done ? [seed.call === undefined ? outputMessage(itemId, seed.text) : functionCall(itemId, seed.call, true)] : [],
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    service_tier: "default",
    temperature: 1,
    text: { format: { type: "text" } },
    tool_choice: seed.toolChoice ?? "auto",
    tools: seed.tools ?? [],
    top_p: 1,
    truncation: "disabled",
    usage: done
      ? {
          input_tokens: seed.inputTokens,
          input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
          output_tokens: seed.outputTokens,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: seed.inputTokens + seed.outputTokens,
        }
      : null,
    metadata: {},
    access_programs: null,
  };
}

/** The non-streamed answer of POST /v1/responses. */
export function openaiResponse(seed: ResponseSeed): WireResponse {
  return response(seed, true);
}

/**
 * The streamed answer: response.created, response.in_progress, response.output_item.added,
 * response.content_part.added, response.output_text.delta × events, response.output_text.done,
 * response.content_part.done, response.output_item.done, response.completed. sequence_number counts from 0.
 * A tool call: response.created, response.in_progress, response.output_item.added (the function_call,
 * arguments ""), response.function_call_arguments.delta × events, response.function_call_arguments.done,
 * response.output_item.done, response.completed.
 */
export function openaiResponseStreamEvents(seed: ResponseSeed): WireResponseStreamEvent[] {
  if (seed.call !== undefined) return functionCallStreamEvents(seed, seed.call);
  const { itemId } = ids(seed);
  const where = { item_id: itemId, output_index: 0, content_index: 0 };
  let sequence_number = 0;
  const events: WireResponseStreamEvent[] = [
    { type: "response.created", sequence_number: sequence_number++, response: response(seed, false) },
    { type: "response.in_progress", sequence_number: sequence_number++, response: response(seed, false) },
    { type: "response.output_item.added", sequence_number: sequence_number++, output_index: 0, item: outputMessage(itemId, null) },
    { type: "response.content_part.added", sequence_number: sequence_number++, ...where, part: outputText("") },
  ];
  for (const delta of splitText(seed.text, seed.events)) {
    events.push({ type: "response.output_text.delta", sequence_number: sequence_number++, ...where, delta, logprobs: [] });
  }
  events.push(
    { type: "response.output_text.done", sequence_number: sequence_number++, ...where, text: seed.text, logprobs: [] },
    { type: "response.content_part.done", sequence_number: sequence_number++, ...where, part: outputText(seed.text) },
    { type: "response.output_item.done", sequence_number: sequence_number++, output_index: 0, item: outputMessage(itemId, seed.text) },
    { type: "response.completed", sequence_number: sequence_number++, response: response(seed, true) },
  );
  return events;
}

function functionCallStreamEvents(seed: ResponseSeed, call: ToolCall): WireResponseStreamEvent[] {
  const { itemId } = ids(seed);
  const where = { item_id: itemId, output_index: 0 };
  let sequence_number = 0;
  const events: WireResponseStreamEvent[] = [
    { type: "response.created", sequence_number: sequence_number++, response: response(seed, false) },
    { type: "response.in_progress", sequence_number: sequence_number++, response: response(seed, false) },
    { type: "response.output_item.added", sequence_number: sequence_number++, output_index: 0, item: functionCall(itemId, call, false) },
  ];
  for (const delta of splitText(call.arguments, seed.events)) {
    events.push({ type: "response.function_call_arguments.delta", sequence_number: sequence_number++, ...where, delta });
  }
  events.push(
    { type: "response.function_call_arguments.done", sequence_number: sequence_number++, ...where, arguments: call.arguments },
    { type: "response.output_item.done", sequence_number: sequence_number++, output_index: 0, item: functionCall(itemId, call, true) },
    { type: "response.completed", sequence_number: sequence_number++, response: response(seed, true) },
  );
  return events;
}

export const EMBEDDING_DIMENSIONS = 8;

/**
 * The embedding of one input: 8 numbers in [-1, 1), multiples of 1/128 (so they survive a float32
 * round trip exactly), from the SHA-256 of the input's JSON.
 */
export function fakeEmbedding(input: string | number[]): number[] {
  const bytes = Buffer.from(digest("embedding", JSON.stringify(input)), "hex");
  return Array.from(bytes.subarray(0, EMBEDDING_DIMENSIONS), (b) => (b - 128) / 128);
}

function float32Base64(values: number[]): string {
  const buffer = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => buffer.writeFloatLE(v, i * 4));
  return buffer.toString("base64");
}

function embeddingInputs(input: unknown): Array<string | number[]> | null {
  if (typeof input === "string") return [input];
  if (!Array.isArray(input) || input.length === 0) return null;
  if (input.every((x) => typeof x === "number")) return [input];
  if (input.every((x) => typeof x === "string")) return input;
  if (input.every((x) => Array.isArray(x) && x.length > 0 && x.every((y) => typeof y === "number"))) return input;
  return null;
}

export interface WireEmbeddingResponse {
  object: "list";
  data: Array<{ object: "embedding"; index: number; embedding: number[] | string }>;
  model: string;
  usage: OpenAI.CreateEmbeddingResponse.Usage;
}

/**
 * POST /v1/embeddings: one embedding per input, as floats, or as base64 of little-endian float32
 * when `encoding_format` is "base64" (what the SDK asks for by default). Null: `input` is invalid.
 */
export function openaiEmbeddings(body: Record<string, unknown>, model: string, inputTokens: number): WireEmbeddingResponse | null {
  const inputs = embeddingInputs(body.input);
  if (inputs === null) return null;
  const base64 = body.encoding_format === "base64";
  return {
    object: "list",
    data: inputs.map((input, index) => {
      const values = fakeEmbedding(input);
      return { object: "embedding", index, embedding: base64 ? float32Base64(values) : values };
    }),
    model,
    usage: { prompt_tokens: inputTokens, total_tokens: inputTokens },
  };
}

/** POST /v1/images/generations: `n` (1..10, default 1) copies of a tiny fixed PNG. Null: `n` is invalid. */
export function openaiImages(body: Record<string, unknown>, inputTokens: number, outputTokens: number): OpenAI.ImagesResponse | null {
  const n = body.n ?? 1;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > 10) return null;
  return {
    created: FAKE_EPOCH_SECONDS,
    data: Array.from({ length: n }, () => ({ b64_json: TINY_PNG_BASE64 })),
    usage: {
      input_tokens: inputTokens,
      input_tokens_details: { image_tokens: 0, text_tokens: inputTokens },
      output_tokens: outputTokens,
      total_tokens: inputTokens + outputTokens,
    },
  };
}

export interface OpenAIModelList {
  object: "list";
  data: OpenAI.Model[];
}

const MODEL_IDS = ["gpt-4.1", "gpt-4.1-mini", "text-embedding-3-small", "gpt-image-1"];

/** GET /v1/models. */
export function openaiModels(): OpenAIModelList {
  return { object: "list", data: MODEL_IDS.map((id) => ({ id, object: "model", created: FAKE_EPOCH_SECONDS, owned_by: "system" })) };
}
