/**
 * OpenAI Chat Completions wire shapes (POST /v1/chat/completions), typed against the official SDK,
 * in three flavours:
 * - `openai`: as OpenAI sends them. Streamed: a first chunk with delta {role, content: "", refusal: null}
 *   (for a tool call: {role, content: null, tool_calls: [{index, id, type, function: {name, arguments: ""}}],
 *   refusal: null}), then one chunk per piece of text (or of the arguments), then a chunk with an empty
 *   delta and the finish_reason; with stream_options.include_usage every chunk carries `"usage": null`
 *   and a last chunk has `choices: []` and the usage.
 * - `azure`: the same, plus Azure's content filter annotations: `prompt_filter_results` and each
 *   choice's `content_filter_results`; a stream opens with Azure's prompt-filter chunk, whose id and
 *   model are "", created 0 and choices [].
 * - `compatible`: as vLLM sends them: no service_tier or system_fingerprint, `stop_reason: null` on a
 *   finished choice, usage without the *_details (prompt_tokens_details: null when not streamed),
 *   `tool_calls: []` on a plain text message; streamed chunks carry no `usage` key except the last,
 *   and a tool call's first delta has the name but no arguments.
 */
import type OpenAI from "openai";
import { FAKE_EPOCH_SECONDS, splitText } from "./common.ts";
import type { ToolCall } from "./tools.ts";

export type ChatFlavour = "openai" | "azure" | "compatible";

export interface ChatSeed {
  /** Hex digest of the request. */
  hash: string;
  model: string;
  flavour: ChatFlavour;
  /** The answer's text, when it makes no tool call. */
  text: string;
  /** A tool call instead of text. */
  call?: ToolCall;
  events: number;
  inputTokens: number;
  outputTokens: number;
  /** stream_options.include_usage. */
  includeUsage: boolean;
}

type Choice = OpenAI.ChatCompletion.Choice;
type ChunkChoice = OpenAI.ChatCompletionChunk.Choice;
type ChunkDelta = OpenAI.ChatCompletionChunk.Choice.Delta;

interface FilterVerdict {
  filtered: boolean;
  severity?: "safe";
  detected?: boolean;
}
type ContentFilterResults = Record<string, FilterVerdict>;
interface PromptFilterResult {
  prompt_index: number;
  content_filter_results: ContentFilterResults;
}

/** vLLM's usage: no *_details. */
interface CompatibleUsage {
  prompt_tokens: number;
  total_tokens: number;
  completion_tokens: number;
  prompt_tokens_details?: null;
}

/** A chat.completion on the wire, in any flavour. */
export type WireChatCompletion =
  | OpenAI.ChatCompletion
  | (OpenAI.ChatCompletion & { prompt_filter_results: PromptFilterResult[]; choices: Array<Choice & { content_filter_results: ContentFilterResults }> })
  | (Omit<OpenAI.ChatCompletion, "usage" | "choices"> & { choices: Array<Choice & { stop_reason: null }>; usage: CompatibleUsage; prompt_logprobs: null });

/** A chat.completion.chunk on the wire, in any flavour (Azure's prompt-filter chunk included). */
export type WireChatChunk =
  | OpenAI.ChatCompletionChunk
  | (Omit<OpenAI.ChatCompletionChunk, "choices" | "usage"> & { choices: Array<ChunkChoice & { content_filter_results?: ContentFilterResults; stop_reason?: null }>; usage?: CompatibleUsage | null })
  | { choices: []; created: 0; id: ""; model: ""; object: ""; prompt_filter_results: PromptFilterResult[] };

const SAFE = { filtered: false, severity: "safe" } as const;
const UNDETECTED = { filtered: false, detected: false } as const;
const PROMPT_FILTERS: PromptFilterResult[] = [
  { prompt_index: 0, content_filter_results: { hate: SAFE, jailbreak: UNDETECTED, self_harm: SAFE, sexual: SAFE, violence: SAFE } },
];
const COMPLETION_FILTERS: ContentFilterResults = {
  hate: SAFE,
  protected_material_code: UNDETECTED,
  protected_material_text: UNDETECTED,
  self_harm: SAFE,
  sexual: SAFE,
  violence: SAFE,
};

/** Every chat fake reports this fingerprint (OpenAI and Azure; vLLM sends none). */
export const FAKE_SYSTEM_FINGERPRINT = "fp_f4ke0000";

export function chatCompletionId(hash: string): string {
  return `chatcmpl-${hash.slice(0, 32)}`;
}

/** The tool call id prefix and length of each flavour: OpenAI `call_` + 24, vLLM `chatcmpl-tool-` + 32. */
export function chatToolCallIdStyle(flavour: ChatFlavour): { prefix: string; length: number } {
  return flavour === "compatible" ? { prefix: "chatcmpl-tool-", length: 32 } : { prefix: "call_", length: 24 };
}

function usage(seed: ChatSeed): OpenAI.CompletionUsage {
  return {
    prompt_tokens: seed.inputTokens,
    completion_tokens: seed.outputTokens,
    total_tokens: seed.inputTokens + seed.outputTokens,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}

function compatibleUsage(seed: ChatSeed, streamed: boolean): CompatibleUsage {
  const figures = { prompt_tokens: seed.inputTokens, total_tokens: seed.inputTokens + seed.outputTokens, completion_tokens: seed.outputTokens };
  return streamed ? figures : { ...figures, prompt_tokens_details: null };
}

function toolCalls(call: ToolCall): OpenAI.ChatCompletionMessageFunctionToolCall[] {
  return [{ id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } }];
}

function message(seed: ChatSeed): OpenAI.ChatCompletionMessage {
  const calls = seed.call === undefined ? [] : toolCalls(seed.call);
  const content = seed.call === undefined ? seed.text : null;
  // vLLM: always tool_calls, no annotations. OpenAI: tool_calls only when there are some.
  if (seed.flavour === "compatible") return { role: "assistant", content, refusal: null, tool_calls: calls };
  if (seed.call !== undefined) return { role: "assistant", content, tool_calls: calls, refusal: null, annotations: [] };
  return { role: "assistant", content, refusal: null, annotations: [] };
}

function finishReason(seed: ChatSeed): "stop" | "tool_calls" {
  return seed.call === undefined ? "stop" : "tool_calls";
}

/** The non-streamed answer. */
export function chatCompletion(seed: ChatSeed): WireChatCompletion {
  const head = { id: chatCompletionId(seed.hash), object: "chat.completion" as const, created: FAKE_EPOCH_SECONDS, model: seed.model };
  const choice: Choice = { index: 0, message: message(seed), logprobs: null, finish_reason: finishReason(seed) };
  switch (seed.flavour) {
    case "openai":
      return { ...head, choices: [choice], usage: usage(seed), service_tier: "default", system_fingerprint: FAKE_SYSTEM_FINGERPRINT };
    case "azure":
      return {
        ...head,
        choices: [{ ...choice, content_filter_results: COMPLETION_FILTERS }],
        usage: usage(seed),
        system_fingerprint: FAKE_SYSTEM_FINGERPRINT,
        prompt_filter_results: PROMPT_FILTERS,
      };
    case "compatible":
      return { ...head, choices: [{ ...choice, stop_reason: null }], usage: compatibleUsage(seed, false), prompt_logprobs: null };
  }
}

/** The deltas of a stream, before the finish chunk: the opening delta, then one per piece. */
function deltas(seed: ChatSeed): ChunkDelta[] {
  const call = seed.call;
  if (call === undefined) {
    const opening: ChunkDelta = seed.flavour === "compatible" ? { role: "assistant", content: "" } : { role: "assistant", content: "", refusal: null };
    return [opening, ...splitText(seed.text, seed.events).map((content) => ({ content }))];
  }
  const pieces = splitText(call.arguments, seed.events).map((piece): ChunkDelta => ({ tool_calls: [{ index: 0, function: { arguments: piece } }] }));
  if (seed.flavour === "compatible") {
    return [{ role: "assistant", content: "" }, { tool_calls: [{ id: call.id, type: "function", index: 0, function: { name: call.name } }] }, ...pieces];
  }
  const first: ChunkDelta = {
    role: "assistant",
    content: null,
    tool_calls: [{ index: 0, id: call.id, type: "function", function: { name: call.name, arguments: "" } }],
    refusal: null,
  };
  return [first, ...pieces];
}

/** The streamed answer: the chunks, in order (the caller frames them and adds `data: [DONE]`). */
export function chatCompletionChunks(seed: ChatSeed): WireChatChunk[] {
  const head = { id: chatCompletionId(seed.hash), object: "chat.completion.chunk" as const, created: FAKE_EPOCH_SECONDS, model: seed.model };
  const all: Array<{ delta: ChunkDelta; finish_reason: ChunkChoice["finish_reason"] }> = [
    ...deltas(seed).map((delta) => ({ delta, finish_reason: null })),
    { delta: {}, finish_reason: finishReason(seed) },
  ];
  switch (seed.flavour) {
    case "openai":
    case "azure": {
      const meta = seed.flavour === "openai" ? { service_tier: "default" as const, system_fingerprint: FAKE_SYSTEM_FINGERPRINT } : { system_fingerprint: FAKE_SYSTEM_FINGERPRINT };
      const filters = seed.flavour === "azure" ? { content_filter_results: {} } : {};
      const tail = seed.includeUsage ? { usage: null } : {};
      const chunks: WireChatChunk[] = all.map(({ delta, finish_reason }) => ({
        ...head,
        ...meta,
        choices: [{ index: 0, delta, logprobs: null, finish_reason, ...filters }],
        ...tail,
      }));
      if (seed.includeUsage) chunks.push({ ...head, ...meta, choices: [], usage: usage(seed) });
      if (seed.flavour === "azure") chunks.unshift({ choices: [], created: 0, id: "", model: "", object: "", prompt_filter_results: PROMPT_FILTERS });
      return chunks;
    }
    case "compatible": {
      const chunks: WireChatChunk[] = all.map(({ delta, finish_reason }) => ({
        ...head,
        choices: [{ index: 0, delta, logprobs: null, finish_reason, ...(finish_reason === null ? {} : { stop_reason: null }) }],
      }));
      if (seed.includeUsage) chunks.push({ ...head, choices: [], usage: compatibleUsage(seed, true) });
      return chunks;
    }
  }
}
