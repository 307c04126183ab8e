/**
 * The one shape every client format is translated through. A call whose client format differs
 * from what its provider speaks is read from the caller's format into these types, written in the
 * provider's, and the answer (or each stream event) comes back the same way. Three formats with a
 * reader and a writer each, instead of a translator for each of the six ordered pairs.
 *
 * Whatever a format holds that these types cannot carry is refused when it is read (`untranslatable`
 * in dataplane/errors.ts), and whatever a format cannot express is refused when it is written:
 * nothing the caller sent is dropped without a word. The few fields that change nothing in the
 * answer (`user`, `store`, `metadata`) are documented in docs/gateway.md where they are left out.
 */

/** An image, by URL or inline. */
export type ImageSource =
  | { kind: "url"; url: string }
  /** `data` is base64, without the `data:` prefix. */
  | { kind: "base64"; mediaType: string; data: string };

export type Part =
  | { type: "text"; text: string }
  | { type: "image"; source: ImageSource }
  /** The model calls a function tool; `arguments` is the JSON text of its arguments, as the model wrote it. */
  | { type: "tool_call"; id: string; name: string; arguments: string }
  /** The caller's answer to a tool call, by the call's id. */
  | { type: "tool_result"; callId: string; content: ToolResultContent; isError: boolean };

/** What a tool result holds: plain text, or text and images. */
export type ToolResultContent = string | Array<Extract<Part, { type: "text" | "image" }>>;

export interface Message {
  role: "user" | "assistant";
  /** In the caller's order. Tool results are in user messages, tool calls in assistant messages. */
  content: Part[];
}

export interface FunctionTool {
  name: string;
  description: string | null;
  /** JSON Schema of the arguments. */
  parameters: Record<string, unknown>;
  /** OpenAI's strict schema mode; null when the caller did not say. */
  strict: boolean | null;
}

export type ToolChoice =
  | { type: "auto" }
  | { type: "none" }
  /** Some tool must be called. */
  | { type: "required" }
  | { type: "tool"; name: string };

export type ResponseFormat =
  | { type: "json_object" }
  | { type: "json_schema"; name: string; schema: Record<string, unknown>; strict: boolean | null; description: string | null };

export type ReasoningEffort = "minimal" | "low" | "medium" | "high";

export interface CanonicalRequest {
  model: string;
  /** The system prompt, instructions and system or developer messages, in order. Empty: none. */
  system: string[];
  messages: Message[];
  tools: FunctionTool[];
  toolChoice: ToolChoice | null;
  /** Null: the caller set no maximum (a writer whose format requires one uses the gateway's default). */
  maxOutputTokens: number | null;
  temperature: number | null;
  topP: number | null;
  /** Anthropic's top_k: only the messages format has it. */
  topK: number | null;
  stopSequences: string[];
  stream: boolean;
  /**
   * Whether a streamed answer ends with its usage. Always for the messages and responses formats;
   * for chat completions, what the caller set in `stream_options.include_usage`. (A request
   * written for a chat completions provider always asks for it: the gateway counts usage.)
   */
  streamUsage: boolean;
  /** Null: the model's default. */
  parallelToolCalls: boolean | null;
  responseFormat: ResponseFormat | null;
  reasoningEffort: ReasoningEffort | null;
  /** An end-user identifier (OpenAI `user`, Anthropic `metadata.user_id`). */
  user: string | null;
}

/** Why the model stopped. */
export type StopReason =
  /** It finished its turn. */
  | "end"
  /** It reached the output maximum. */
  | "max_tokens"
  /** It wrote one of the stop sequences (Anthropic names which; the others say "stop"). */
  | "stop_sequence"
  /** It called tools and waits for their results. */
  | "tool_use"
  /** The provider's filter or the model's refusal ended it. */
  | "content_filter";

export interface Usage {
  /** All input tokens, cached ones included. */
  inputTokens: number;
  /** All output tokens, reasoning ones included. */
  outputTokens: number;
  /** Of the input, read from the provider's cache. */
  cachedInputTokens: number;
  /** Of the input, written to the provider's cache (Anthropic counts these apart). */
  cacheWriteInputTokens: number;
  /** Of the output, spent on reasoning the caller does not see. */
  reasoningTokens: number;
}

/** Output parts: text and tool calls. Reasoning the provider returns is counted in usage, not shown. */
export type AnswerPart = Extract<Part, { type: "text" | "tool_call" }>;

export interface CanonicalAnswer {
  /** The provider's id for the answer. */
  id: string;
  model: string;
  /** Unix seconds: the provider's when it says, else when the gateway read it. */
  created: number;
  content: AnswerPart[];
  stopReason: StopReason;
  /** The stop sequence that ended the answer, when the provider says which. */
  stopSequence: string | null;
  usage: Usage;
}

/**
 * A stream, as blocks that open, grow and close, in Anthropic's manner (the richest of the three):
 * one `start`, then blocks one after another (each opened, given deltas, closed; indexes count
 * from 0 in order), then one `stop`. Readers emit events as the provider's arrive; writers
 * write each as it comes (a writer may keep what it has written, such as a block's text so far,
 * for formats whose closing events repeat it, but never holds an event back).
 */
export type StreamEvent =
  | { type: "start"; id: string; model: string; created: number; usage: Usage | null }
  | { type: "block_start"; index: number; block: { type: "text" } | { type: "tool_call"; id: string; name: string } }
  | { type: "text_delta"; index: number; text: string }
  /** A piece of a tool call's arguments, as JSON text. */
  | { type: "arguments_delta"; index: number; json: string }
  | { type: "block_stop"; index: number }
  /** The end of the answer; `usage` is what the provider reported (null: nothing). */
  | { type: "stop"; stopReason: StopReason; stopSequence: string | null; usage: Usage | null };

export const noUsage = (): Usage => ({ inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, cacheWriteInputTokens: 0, reasoningTokens: 0 });
