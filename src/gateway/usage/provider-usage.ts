import type { SseEvent } from "../providers/sse.ts";

/** Tokens as a provider reported them, input and output, with cached and reasoning tokens in. */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  /** Of the input, the tokens read from the provider's prompt cache, when it said (they cost less). */
  cachedInputTokens?: number;
}

type Json = unknown;
const isRecord = (value: Json): value is Record<string, Json> => typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * The most tokens counted for one figure of one request: a trillion, far past any context window.
 * A provider that reports more (3e9 has been seen, 1e300 is valid JSON) is wrong, and its figure
 * is counted as this; so sums stay exact integers in JavaScript, Redis and PostgreSQL's bigint.
 */
export const MAX_REPORTED_TOKENS = 1_000_000_000_000;

/** A reported count as a whole number of tokens: not a positive finite number (a string, NaN, -3) is 0, fractions are cut. */
const count = (value: Json): number =>
  typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.min(MAX_REPORTED_TOKENS, Math.floor(value)) : 0;

/**
 * A `usage` object of either family. Anthropic counts cache writes and reads apart from
 * `input_tokens`, so they are added; OpenAI's `input_tokens` already holds its cached tokens and
 * `output_tokens` its reasoning tokens. Embeddings report `prompt_tokens`.
 */
export function usageFrom(usage: Json): TokenUsage | undefined {
  if (!isRecord(usage)) return undefined;
  const input = count(usage.input_tokens) + count(usage.cache_creation_input_tokens) + count(usage.cache_read_input_tokens) ||
    count(usage.prompt_tokens);
  const output = count(usage.output_tokens) || count(usage.completion_tokens);
  if (input === 0 && output === 0 && !("input_tokens" in usage) && !("prompt_tokens" in usage)) return undefined;
  // Three capped figures may add up past the cap.
  const inputTokens = Math.min(MAX_REPORTED_TOKENS, input);
  const cached = cachedTokens(usage);
  return cached > 0 ? { inputTokens, outputTokens: output, cachedInputTokens: Math.min(cached, inputTokens) } : { inputTokens, outputTokens: output };
}

/** Cache reads: Anthropic's `cache_read_input_tokens`, OpenAI's `input_tokens_details` (Responses) or `prompt_tokens_details` (chat). */
function cachedTokens(usage: Record<string, Json>): number {
  const details = isRecord(usage.input_tokens_details) ? usage.input_tokens_details : isRecord(usage.prompt_tokens_details) ? usage.prompt_tokens_details : undefined;
  return count(usage.cache_read_input_tokens) || (details ? count(details.cached_tokens) : 0);
}

/** A non-streamed answer body as JSON; undefined when it is not JSON. */
export function parseAnswer(body: Buffer): Json {
  try {
    return JSON.parse(body.toString("utf8"));
  } catch {
    return undefined;
  }
}

/** The usage in a parsed answer (parseAnswer). */
export function usageOfAnswer(parsed: Json): TokenUsage | undefined {
  return isRecord(parsed) ? usageFrom(parsed.usage) : undefined;
}

/**
 * Follows a stream's usage events as they pass: Anthropic's message_start (input) and
 * message_delta (output so far, cumulative); OpenAI's response.completed (the total); a chat
 * completions chunk that carries `usage` (the total, in the last chunk when asked for). What it
 * holds at any time is what the provider has reported so far.
 */
export class StreamUsage {
  #input = 0;
  #output = 0;
  #cached: number | undefined;
  #reported = false;

  observe(event: SseEvent): void {
    const name = event.name;
    if (name === null) return this.#observeChunk(event);
    if (name !== "message_start" && name !== "message_delta" && name !== "response.completed") return;
    const data = event.json;
    if (data.kind !== "json" || !isRecord(data.value)) return;
    const value = data.value;
    if (name === "message_start" && isRecord(value.message)) {
      const usage = usageFrom(value.message.usage);
      if (usage) this.#set(usage.inputTokens, Math.max(this.#output, usage.outputTokens), usage.cachedInputTokens);
    } else if (name === "message_delta") {
      const usage = isRecord(value.usage) ? value.usage : undefined;
      if (usage) this.#set(Math.max(this.#input, usageFrom(usage)?.inputTokens ?? 0), count(usage.output_tokens), this.#cached);
    } else if (isRecord(value.response)) {
      const usage = usageFrom(value.response.usage);
      if (usage) this.#set(usage.inputTokens, usage.outputTokens, usage.cachedInputTokens);
    }
  }

  /** What a translated stream's reader found (the provider's figures, as canonical usage). */
  report(usage: TokenUsage): void {
    this.#set(usage.inputTokens, usage.outputTokens, usage.cachedInputTokens);
  }

  /** A chat completions chunk: only one with a usage object says anything (others carry `"usage": null`). */
  #observeChunk(event: SseEvent): void {
    // Cheap test first: most chunks are deltas without usage, and are not parsed for it.
    if (!event.raw.includes('"usage":{') && !event.raw.includes('"usage": {')) return;
    const data = event.json;
    if (data.kind !== "json" || !isRecord(data.value)) return;
    const usage = usageFrom(data.value.usage);
    if (usage) this.#set(usage.inputTokens, usage.outputTokens, usage.cachedInputTokens);
  }

  /** Undefined when the provider reported nothing yet. */
  get usage(): TokenUsage | undefined {
    if (!this.#reported) return undefined;
    return this.#cached === undefined ? { inputTokens: this.#input, outputTokens: this.#output } : { inputTokens: this.#input, outputTokens: this.#output, cachedInputTokens: this.#cached };
  }

  #set(input: number, output: number, cached: number | undefined): void {
    this.#input = input;
    this.#output = output;
    this.#cached = cached;
    this.#reported = true;
  }
}
