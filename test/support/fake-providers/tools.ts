/**
 * What the fakes answer, whatever the format: a tool call, a tool result echoed, or text.
 *
 * Each format's reader (anthropic-request.ts, responses-request.ts, chat-request.ts) validates the
 * request and reduces it to a RequestReading; planAnswer turns that and the directives into an Answer:
 * - The request declares tools, tool_choice is not "none", and its last input is a user turn that is
 *   not a tool result: a call to the tool tool_choice names, else to the first tool, with the
 *   arguments of the `toolArgs` directive (default `{"city":"Paris"}`).
 * - Otherwise text: the `text` directive when given, exactly; else, when the last input is tool
 *   results, `Tool <name> said: <result text>` (one line per result, the name found by the call's id
 *   earlier in the conversation), or the default `Hello from <kind>`; then, when the request holds
 *   images (anywhere, tool results included), `. Saw <n> image.` / `. Saw <n> images.` appended.
 *   So `Hello from openai. Saw 2 images.`
 */
import { digest } from "./common.ts";
import type { FakeDirectives } from "./directives.ts";

export const DEFAULT_TOOL_ARGS = '{"city":"Paris"}';

/** A request the real API would refuse: the message, and for OpenAI the `param` and `code` it names. */
export interface RequestError {
  message: string;
  param?: string;
  code?: string;
}

/** Thrown by the readers (deep in a walk of the request) and caught by readWith. */
export class Refusal extends Error {
  readonly error: RequestError;
  constructor(error: RequestError) {
    super(error.message);
    this.error = error;
  }
}

export function refuse(message: string, param?: string, code?: string): never {
  throw new Refusal({ message, ...(param === undefined ? {} : { param }), ...(code === undefined ? {} : { code }) });
}

/** Runs a reader; a Refusal becomes a failed ReadResult. */
export function readWith(read: () => RequestReading): ReadResult {
  try {
    return { ok: true, reading: read() };
  } catch (error) {
    if (error instanceof Refusal) return { ok: false, error: error.error };
    throw error;
  }
}

export type ToolChoice = { type: "auto" } | { type: "none" } | { type: "required" } | { type: "named"; name: string };

export interface ToolResultSeen {
  /** The name of the tool whose call this answers. */
  name: string;
  /** Its text parts, joined. */
  text: string;
}

export interface RequestReading {
  /** The declared tools' names, in order. */
  tools: string[];
  choice: ToolChoice;
  /** The last input: a user turn, tool results (`results` holds them), or anything else (an assistant prefill, nothing). */
  last: "user" | "tool_results" | "other";
  results: ToolResultSeen[];
  /** Images anywhere in the request. */
  images: number;
}

export type ReadResult = { ok: true; reading: RequestReading } | { ok: false; error: RequestError };

/** The tool call of an answer, with its id in the provider's own style. */
export interface ToolCall {
  id: string;
  name: string;
  /** JSON text, as OpenAI sends it: the directive's text as written. */
  arguments: string;
  /** The same, parsed, as Anthropic sends it. */
  input: Record<string, unknown>;
}

export type Answer = { kind: "text"; text: string } | { kind: "tool_call"; name: string; arguments: string };

export function planAnswer(reading: RequestReading, d: FakeDirectives, defaultText: string): Answer {
  if (reading.tools.length > 0 && reading.last === "user" && reading.choice.type !== "none") {
    const name = reading.choice.type === "named" ? reading.choice.name : reading.tools[0]!;
    return { kind: "tool_call", name, arguments: d.toolArgs ?? DEFAULT_TOOL_ARGS };
  }
  if (d.text !== undefined) return { kind: "text", text: d.text };
  const base = reading.last === "tool_results" && reading.results.length > 0 ? reading.results.map((r) => `Tool ${r.name} said: ${r.text}`).join("\n") : defaultText;
  const n = reading.images;
  return { kind: "text", text: n === 0 ? base : `${base}. Saw ${n} image${n === 1 ? "" : "s"}.` };
}

/** The id of the call an answer makes: `<prefix><hex digest of the request>`. */
export function toolCall(answer: Extract<Answer, { kind: "tool_call" }>, hash: string, prefix: string, length: number): ToolCall {
  const input: unknown = JSON.parse(answer.arguments);
  return {
    id: `${prefix}${digest("tool-call", hash).slice(0, length)}`,
    name: answer.name,
    arguments: answer.arguments,
    input: input as Record<string, unknown>,
  };
}
