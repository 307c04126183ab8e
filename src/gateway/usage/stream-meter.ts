import type { StreamEvent } from "../formats/canonical.ts";
import type { SseEvent } from "../providers/sse.ts";
import { StreamUsage, type TokenUsage } from "./provider-usage.ts";

/** Roughly four characters a token, for text the provider did not count for us. */
const charsPerToken = 4;

/** Events after which a provider sends nothing more (the answer is complete, or failed). */
const finalEvents: ReadonlySet<string> = new Set(["message_stop", "response.completed", "response.incomplete", "response.failed", "error"]);

/**
 * Counts a stream as it passes: the provider's usage events when it sends them; otherwise (a
 * stream the caller abandoned, or the provider cut, before the usage event) an estimate from the
 * request's size and the text that did pass, marked as such. With `keepTextChars`, it also keeps
 * the output text (for a pipeline row), up to that many characters: the stream itself is never
 * held.
 */
export class StreamMeter {
  readonly #reported = new StreamUsage();
  readonly #requestBytes: number;
  readonly #keepTextChars: number;
  readonly #kept: string[] = [];
  #keptChars = 0;
  #textChars = 0;
  #sawEvent = false;
  #complete = false;

  constructor(requestBytes: number, keepTextChars = 0) {
    this.#requestBytes = requestBytes;
    this.#keepTextChars = keepTextChars;
  }

  /** An event of a stream passed through as it is, in any of the three formats. */
  observe(event: SseEvent): void {
    this.#sawEvent = true;
    const name = event.name;
    if (name === null ? event.data === "[DONE]" : finalEvents.has(name)) this.#complete = true;
    this.#reported.observe(event);
    if (name === "content_block_delta" || name === "response.output_text.delta" || name === null) {
      const data = event.json;
      if (data.kind === "json" && typeof data.value === "object" && data.value !== null) {
        const text = name === null ? chunkText(data.value) : deltaText(data.value);
        if (typeof text === "string") this.#addText(text);
      }
    }
  }

  /** An event of a translated stream, as its reader made it. */
  observeCanonical(event: StreamEvent): void {
    this.#sawEvent = true;
    if (event.type === "text_delta") this.#addText(event.text);
    else if (event.type === "stop") {
      this.#complete = true;
      if (event.usage) this.#reported.report(event.usage);
    }
  }

  #addText(text: string): void {
    this.#textChars += text.length;
    if (this.#keptChars < this.#keepTextChars) {
      const piece = text.length > this.#keepTextChars - this.#keptChars ? text.slice(0, this.#keepTextChars - this.#keptChars) : text;
      this.#kept.push(piece);
      this.#keptChars += piece.length;
    }
  }

  /** The output text kept (at most `keepTextChars`), and how long the whole was. */
  get text(): { kept: string; total: number } {
    return { kept: this.#kept.join(""), total: this.#textChars };
  }

  get sawEvent(): boolean {
    return this.#sawEvent;
  }

  /** The provider sent its final event: what it reported so far is all it will report. */
  get complete(): boolean {
    return this.#complete;
  }

  /** The provider said nothing about usage, complete or partial. */
  get estimated(): boolean {
    return this.#sawEvent && this.#reported.usage === undefined;
  }

  get usage(): TokenUsage | undefined {
    if (!this.#sawEvent) return undefined;
    return this.#reported.usage ?? {
      inputTokens: Math.ceil(this.#requestBytes / charsPerToken),
      outputTokens: Math.ceil(this.#textChars / charsPerToken),
    };
  }
}

/** The text of an Anthropic text delta or a Responses text delta. */
function deltaText(value: object): unknown {
  const delta = (value as { delta?: unknown }).delta;
  return typeof delta === "string" ? delta : (delta as { text?: unknown } | undefined)?.text;
}

/** The text of a chat completions chunk: its first choice's content delta. */
function chunkText(value: object): unknown {
  const choices = (value as { choices?: unknown }).choices;
  const first: unknown = Array.isArray(choices) ? choices[0] : undefined;
  const delta = typeof first === "object" && first !== null ? (first as { delta?: unknown }).delta : undefined;
  return typeof delta === "object" && delta !== null ? (delta as { content?: unknown }).content : undefined;
}
