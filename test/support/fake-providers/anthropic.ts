/** Anthropic Messages API wire shapes, typed against the official SDK. */
import type Anthropic from "@anthropic-ai/sdk";
import { FAKE_EPOCH_ISO, splitText } from "./common.ts";
import type { ToolCall } from "./tools.ts";

export interface AnthropicErrorBody {
  type: "error";
  error: { type: string; message: string };
}

/** The error `type` Anthropic uses for a status. */
export function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 402:
      return "billing_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 504:
      return "timeout_error";
    case 529:
      return "overloaded_error";
    default:
      return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

export function anthropicError(status: number, message: string, type?: string): AnthropicErrorBody {
  return { type: "error", error: { type: type ?? anthropicErrorType(status), message } };
}

export interface MessageSeed {
  /** Hex digest of the request. */
  hash: string;
  model: string;
  /** The answer's text, when it makes no tool call. */
  text: string;
  /** A tool_use block instead of text (stop_reason tool_use). */
  call?: ToolCall;
  events: number;
  inputTokens: number;
  outputTokens: number;
}

function messageId(seed: MessageSeed): string {
  return `msg_${seed.hash.slice(0, 24)}`;
}

function usage(inputTokens: number, outputTokens: number): Anthropic.Usage {
  return {
    input_tokens: inputTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
    output_tokens: outputTokens,
    output_tokens_details: null,
    server_tool_use: null,
    service_tier: "standard",
    inference_geo: null,
    speed: null,
  };
}

function stopReason(seed: MessageSeed): Anthropic.StopReason {
  return seed.call === undefined ? "end_turn" : "tool_use";
}

function toolUse(call: ToolCall, input: Record<string, unknown>): Anthropic.ToolUseBlock {
  return { type: "tool_use", id: call.id, name: call.name, input, caller: { type: "direct" } };
}

function message(seed: MessageSeed, content: Anthropic.ContentBlock[], done: boolean): Anthropic.Message {
  return {
    id: messageId(seed),
    type: "message",
    role: "assistant",
    model: seed.model,
    content,
    stop_reason: done ? stopReason(seed) : null,
    stop_sequence: null,
    stop_details: null,
    container: null,
    diagnostics: null,
    // As the real API does: the stream's message_start counts one output token, message_delta the total.
    usage: usage(seed.inputTokens, done ? seed.outputTokens : Math.min(1, seed.outputTokens)),
  };
}

/** The non-streamed answer of POST /v1/messages: one text block, or one tool_use block. */
export function anthropicMessage(seed: MessageSeed): Anthropic.Message {
  const block: Anthropic.ContentBlock = seed.call === undefined ? { type: "text", text: seed.text, citations: null } : toolUse(seed.call, seed.call.input);
  return message(seed, [block], true);
}

/** The content_block_start and content_block_delta events of the one block. */
function blockEvents(seed: MessageSeed): Anthropic.RawMessageStreamEvent[] {
  const call = seed.call;
  if (call === undefined) {
    return [
      { type: "content_block_start", index: 0, content_block: { type: "text", text: "", citations: null } },
      ...splitText(seed.text, seed.events).map((text): Anthropic.RawMessageStreamEvent => ({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } })),
    ];
  }
  return [
    { type: "content_block_start", index: 0, content_block: toolUse(call, {}) },
    ...splitText(JSON.stringify(call.input), seed.events).map(
      (partial_json): Anthropic.RawMessageStreamEvent => ({ type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json } }),
    ),
  ];
}

/**
 * The streamed answer: message_start, content_block_start, content_block_delta × events (text_delta,
 * or input_json_delta pieces of the tool call's input), content_block_stop, message_delta (with the
 * final usage), message_stop.
 */
export function anthropicStreamEvents(seed: MessageSeed): Anthropic.RawMessageStreamEvent[] {
  const events: Anthropic.RawMessageStreamEvent[] = [{ type: "message_start", message: message(seed, [], false) }, ...blockEvents(seed)];
  events.push(
    { type: "content_block_stop", index: 0 },
    {
      type: "message_delta",
      delta: { stop_reason: stopReason(seed), stop_sequence: null, stop_details: null, container: null },
      usage: {
        input_tokens: seed.inputTokens,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: seed.outputTokens,
        output_tokens_details: null,
        server_tool_use: null,
      },
    },
    { type: "message_stop" },
  );
  return events;
}

const MODELS: ReadonlyArray<{ id: string; display_name: string; line: Anthropic.Models.ModelLine }> = [
  { id: "claude-sonnet-4-5", display_name: "Claude Sonnet 4.5", line: "sonnet" },
  { id: "claude-haiku-4-5", display_name: "Claude Haiku 4.5", line: "haiku" },
  { id: "claude-opus-4-1", display_name: "Claude Opus 4.1", line: "opus" },
];

export interface AnthropicModelList {
  data: Anthropic.ModelInfo[];
  has_more: boolean;
  first_id: string | null;
  last_id: string | null;
}

/** GET /v1/models. */
export function anthropicModels(): AnthropicModelList {
  const data: Anthropic.ModelInfo[] = MODELS.map((m) => ({
    type: "model",
    id: m.id,
    display_name: m.display_name,
    created_at: FAKE_EPOCH_ISO,
    capabilities: null,
    deprecated_at: null,
    lifecycle: "active",
    line: m.line,
    max_input_tokens: 200_000,
    max_tokens: 64_000,
    retires_at: null,
  }));
  return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}
