/**
 * What a pipeline row keeps of a request's input: its messages as text, the system prompt, the
 * Responses API's `instructions`, and the last user text. Images, audio and files become a short
 * placeholder (never their bytes); tool calls and their results are kept as text. Every text is
 * capped, with a marker where it was cut, and so is the number of messages, so that one row stays
 * small whatever the request; the walk is linear in the request's size.
 */

type Json = unknown;
const isRecord = (value: Json): value is Record<string, Json> => typeof value === "object" && value !== null && !Array.isArray(value);

/** The most characters kept of each text of a row (input, output, system, instructions, all messages together). */
export const MAX_ROW_TEXT_CHARS = 64 * 1024;

export interface TranscriptMessage {
  role: string;
  content: string;
}

export interface Transcript {
  /** Null for endpoints without messages (embeddings, images). */
  messages: TranscriptMessage[] | null;
  system: string | null;
  instructions: string | null;
  /** The last user text; the prompt of an image, the texts of embeddings. */
  input: string | null;
}

export type TranscriptEndpoint = "messages" | "responses" | "chat" | "embeddings" | "images";

/** `text`, cut to `max` characters (never inside a surrogate pair) with a marker that says so. */
export function capText(text: string, max = MAX_ROW_TEXT_CHARS, total = text.length): string {
  if (total <= max && text.length <= max) return text;
  let end = Math.min(max, text.length);
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}${cutMarker(end, total)}`;
}

function cutMarker(kept: number, total: number): string {
  return ` [cut by Warden: ${kept} of ${total} characters kept]`;
}

/** Short text that names a caller-given type, as in "[image]". */
function placeholder(kind: unknown): string {
  return `[${typeof kind === "string" ? kind.slice(0, 64) : "part"}]`;
}

/** Builds text from parts, keeping at most `max` characters but counting every one. */
class CappedText {
  readonly #parts: string[] = [];
  #kept = 0;
  #total = 0;
  readonly #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  add(part: string): void {
    const separator = this.#total > 0 ? 1 : 0;
    this.#total += separator + part.length;
    const room = this.#max - this.#kept;
    if (room <= 0) return;
    const piece = (separator ? "\n" : "") + part;
    const kept = piece.length > room ? piece.slice(0, room) : piece;
    this.#parts.push(kept);
    this.#kept += kept.length;
  }

  get total(): number {
    return this.#total;
  }

  get empty(): boolean {
    return this.#total === 0;
  }

  text(): string {
    const joined = this.#parts.join("");
    return this.#total > this.#kept ? capText(joined, this.#max, this.#total) : joined;
  }
}

/**
 * The text of a message's content: a string, or blocks (text blocks' text, tool results' content,
 * a placeholder for the rest), joined by line breaks. Tool results nest one level of blocks, which
 * is as deep as this goes: anything deeper is a placeholder.
 */
function contentText(content: Json, out: CappedText, depth = 0): void {
  if (typeof content === "string") return out.add(content);
  if (!Array.isArray(content)) {
    if (isRecord(content)) blockText(content, out, depth);
    return;
  }
  for (const block of content) {
    if (typeof block === "string") out.add(block);
    else if (isRecord(block)) blockText(block, out, depth);
  }
}

function blockText(block: Record<string, Json>, out: CappedText, depth: number): void {
  const type = block.type;
  if (typeof block.text === "string" && (type === undefined || type === "text" || type === "input_text" || type === "output_text")) {
    out.add(block.text);
  } else if ((type === "tool_result" || type === "function_call_output") && depth === 0) {
    contentText(type === "tool_result" ? block.content : block.output, out, depth + 1);
  } else if ((type === "tool_use" || type === "function_call") && typeof block.name === "string") {
    out.add(`[${type}: ${block.name.slice(0, 128)}]`);
  } else {
    out.add(placeholder(type));
  }
}

function textOf(content: Json, max = MAX_ROW_TEXT_CHARS): string | null {
  if (content === undefined || content === null) return null;
  const out = new CappedText(max);
  contentText(content, out);
  return out.empty ? null : out.text();
}

/** Messages within one budget of characters; past it, the rest is counted in a marker. */
class MessageList {
  readonly messages: TranscriptMessage[] = [];
  #room = MAX_ROW_TEXT_CHARS;
  #left = 0;

  add(role: Json, content: Json, asItem?: Record<string, Json>): void {
    if (this.#room <= 0) {
      this.#left += 1;
      return;
    }
    const out = new CappedText(this.#room);
    if (asItem) blockText(asItem, out, 0);
    else contentText(content, out);
    const text = out.text();
    // Each message costs its text and a little for its role, so that a million empty messages end too.
    this.#room -= Math.min(out.total, this.#room) + 16;
    this.messages.push({ role: typeof role === "string" ? role.slice(0, 32) : "user", content: text });
  }

  done(): TranscriptMessage[] {
    const last = this.messages.at(-1);
    if (this.#left > 0 && last) last.content += ` [cut by Warden: ${this.#left} more messages not kept]`;
    return this.messages;
  }
}

function lastUserText(messages: TranscriptMessage[]): string | null {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!.role === "user") return messages[i]!.content;
  return null;
}

/** Content as a list of parts: none for null or "". */
function contentParts(content: Json): Json[] {
  if (Array.isArray(content)) return content;
  return content === undefined || content === null || content === "" ? [] : [content];
}

/** A chat completions tool call as a block that blockText writes as "[function_call: name]". */
function chatToolCall(call: Json): Json {
  const fn = isRecord(call) && isRecord(call.function) ? call.function : undefined;
  return { type: "function_call", name: typeof fn?.name === "string" ? fn.name : "" };
}

/** The transcript of a request body of `endpoint` (a parsed JSON object). */
export function transcriptOf(body: Record<string, Json>, endpoint: TranscriptEndpoint): Transcript {
  switch (endpoint) {
    case "messages": {
      const list = new MessageList();
      if (Array.isArray(body.messages)) for (const m of body.messages) if (isRecord(m)) list.add(m.role, m.content);
      const messages = list.done();
      return { messages, system: textOf(body.system), instructions: null, input: lastUserText(messages) };
    }
    case "responses": {
      const list = new MessageList();
      if (typeof body.input === "string") list.add("user", body.input);
      else if (Array.isArray(body.input)) {
        for (const item of body.input) {
          if (typeof item === "string") list.add("user", item);
          else if (!isRecord(item)) continue;
          else if ("content" in item) list.add(item.role, item.content);
          // Items without content: a tool's output, a call, reasoning, a reference.
          else list.add(typeof item.role === "string" ? item.role : item.type === "function_call_output" ? "tool" : "assistant", undefined, item);
        }
      }
      const messages = list.done();
      return { messages, system: null, instructions: textOf(body.instructions), input: lastUserText(messages) };
    }
    case "chat": {
      // System and developer messages are the row's system prompt; an assistant's tool calls are
      // kept as text after its content, as the other formats' calls are.
      const list = new MessageList();
      const system = new CappedText(MAX_ROW_TEXT_CHARS);
      if (Array.isArray(body.messages)) {
        for (const m of body.messages) {
          if (!isRecord(m)) continue;
          if (m.role === "system" || m.role === "developer") contentText(m.content, system);
          else if (Array.isArray(m.tool_calls) && m.tool_calls.length > 0) list.add(m.role, [...contentParts(m.content), ...m.tool_calls.map(chatToolCall)]);
          else list.add(m.role, m.content);
        }
      }
      const messages = list.done();
      return { messages, system: system.empty ? null : system.text(), instructions: null, input: lastUserText(messages) };
    }
    case "embeddings": {
      const input = body.input;
      const texts = typeof input === "string" ? [input] : Array.isArray(input) ? input.map((t) => (typeof t === "string" ? t : placeholder("tokens"))) : [];
      const out = new CappedText(MAX_ROW_TEXT_CHARS);
      for (const text of texts) out.add(text);
      return { messages: null, system: null, instructions: null, input: out.empty ? null : out.text() };
    }
    case "images":
      return { messages: null, system: null, instructions: null, input: typeof body.prompt === "string" ? capText(body.prompt) : null };
  }
}
