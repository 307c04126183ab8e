/**
 * The text that guardrails read. Input: every piece of caller text in a request — the system
 * prompt or instructions, message and content-block text, and tool results. Output: the text of a
 * response that is not streamed. Images, audio and files are not text, and are left out.
 */

import { transcriptOf, type Transcript } from "../usage/transcript.ts";

type Json = unknown;

const isRecord = (value: Json): value is Record<string, Json> => typeof value === "object" && value !== null && !Array.isArray(value);

/** The text parts of a Messages API request (Anthropic style). */
export function messagesInputText(body: Record<string, Json>): string[] {
  const extracted = extractedText(body);
  if (extracted) return [extracted.all];
  const parts: string[] = [];
  collectBlocks(body.system, parts);
  if (Array.isArray(body.messages)) {
    for (const message of body.messages) if (isRecord(message)) collectBlocks(message.content, parts);
  }
  return parts;
}

/** The text parts of a Responses API request (OpenAI style). */
export function responsesInputText(body: Record<string, Json>): string[] {
  const extracted = extractedText(body);
  if (extracted) return [extracted.all];
  const parts: string[] = [];
  if (typeof body.instructions === "string") parts.push(body.instructions);
  collectBlocks(body.input, parts);
  return parts;
}

/** The prompt of an image generation request. */
export function imagesInputText(body: Record<string, Json>): string[] {
  const extracted = extractedText(body);
  if (extracted) return [extracted.all];
  return typeof body.prompt === "string" ? [body.prompt] : [];
}

/**
 * Text blocks wherever they sit: a plain string; `text` of text blocks (text, input_text,
 * output_text); tool results (`content` of tool_result blocks, `output` of function-call
 * outputs); and items that carry `content` of their own, such as Responses input messages.
 *
 * Walked with a stack of its own, in document order: a caller can nest content a million deep in
 * a 32 MiB body, which would overflow the call stack of a recursive walk.
 */
function collectBlocks(value: Json, parts: string[]): void {
  const pending: Json[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === "string") {
      parts.push(item);
    } else if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) pending.push(item[i]);
    } else if (isRecord(item)) {
      if (typeof item.text === "string") parts.push(item.text);
      if (typeof item.output === "string") parts.push(item.output);
      if ("content" in item) pending.push(item.content);
    }
  }
}

/** The text of a non-streamed answer: Messages content blocks, or Responses output items. */
export function outputText(body: Buffer): string[] {
  let parsed: Json;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch {
    return [];
  }
  return outputTextOf(parsed);
}

/** The text of an answer already parsed. */
export function outputTextOf(parsed: Json): string[] {
  if (!isRecord(parsed)) return [];
  const parts: string[] = [];
  collectBlocks(parsed.content, parts);
  collectBlocks(parsed.output, parts);
  return parts;
}

/**
 * The parts joined by line breaks, cut to at most `maxBytes` bytes of UTF-8 (on a character
 * boundary); `truncated` says whether anything was cut. Only the part that is kept is joined.
 */
export function joinCapped(parts: readonly string[], maxBytes: number): { text: string; truncated: boolean } {
  let units = Math.max(0, parts.length - 1);
  for (const part of parts) units += part.length;
  // A UTF-16 code unit is at most three bytes of UTF-8.
  if (units * 3 <= maxBytes) return { text: parts.join("\n"), truncated: false };
  // And at least one: no more than maxBytes units can fit.
  const kept: string[] = [];
  let length = 0;
  for (const part of parts) {
    if (length >= maxBytes) break;
    const piece = (kept.length > 0 ? "\n" : "") + part;
    kept.push(piece.length > maxBytes - length ? piece.slice(0, maxBytes - length) : piece);
    length += Math.min(piece.length, maxBytes - length);
  }
  const prefix = kept.join("");
  const { read } = new TextEncoder().encodeInto(prefix, new Uint8Array(maxBytes));
  let end = read;
  // A high surrogate whose low half was cut off is not a character.
  const last = prefix.charCodeAt(end - 1);
  if (end < units && last >= 0xd800 && last <= 0xdbff) end -= 1;
  return { text: prefix.slice(0, end), truncated: end < units };
}

// --- Bodies parsed off the event loop -----------------------------------------------------------

/**
 * The caller text of a body that a worker parsed (request-bodies.ts). `all` is every part with
 * nothing between them: its length is what usage limits count, exactly as for the parts. `capped`
 * is what guardrails read: the parts joined by line breaks and cut to the cap, as joinCapped does.
 */
export interface ExtractedText {
  all: string;
  capped: { text: string; truncated: boolean };
}

/** What a worker sends back for a large body: small, so that the event loop copies little. */
export interface BodySummary {
  fields: Record<string, Json>;
  text: ExtractedText;
  /** For a key whose traffic goes to an inference pipeline: what its row keeps (capped). */
  transcript?: Transcript;
}

const EXTRACTED = Symbol("caller text extracted by a worker");
const TRANSCRIPT = Symbol("pipeline row transcript made by a worker");

/** The fields of each endpoint that carry caller text; the summary's `text` stands for them. */
const textFields: Record<"messages" | "responses" | "images" | "embeddings", readonly string[]> = {
  messages: ["system", "messages"],
  responses: ["instructions", "input"],
  images: ["prompt"],
  embeddings: ["input"],
};

/**
 * A parsed body, reduced to what the event loop reads: every top-level field, with objects and
 * arrays emptied (`{}`, `[]`: every check of a field's type or value answers as for the original)
 * and the caller-text fields left out; and the caller text. Embeddings keep `input` as their texts
 * joined, which usage limits count.
 */
export function summarize(body: Record<string, Json>, endpoint: keyof typeof textFields, maxTextBytes: number, withTranscript = false): BodySummary {
  const parts =
    endpoint === "messages"
      ? messagesInputText(body)
      : endpoint === "responses"
        ? responsesInputText(body)
        : endpoint === "images"
          ? imagesInputText(body)
          : embeddingTexts(body.input);
  // No prototype: a caller's "__proto__" field stays a field.
  const fields: Record<string, Json> = Object.create(null);
  for (const [name, value] of Object.entries(body)) {
    if (textFields[endpoint].includes(name)) continue;
    fields[name] = Array.isArray(value) ? [] : isRecord(value) ? {} : value;
  }
  const all = parts.join("");
  if (endpoint === "embeddings") fields.input = all;
  const summary: BodySummary = { fields, text: { all, capped: joinCapped(parts, maxTextBytes) } };
  if (withTranscript) summary.transcript = transcriptOf(body, endpoint);
  return summary;
}

/** The body the event loop works with for a summary: its fields, carrying the caller text. */
export function standIn(summary: BodySummary): Record<string, Json> {
  const body = Object.defineProperty({ ...summary.fields }, EXTRACTED, { value: summary.text, enumerable: false });
  return summary.transcript ? Object.defineProperty(body, TRANSCRIPT, { value: summary.transcript, enumerable: false }) : body;
}

/** The transcript a worker made of a large body, or undefined (a body parsed on the event loop). */
export function standInTranscript(body: Record<string, Json>): Transcript | undefined {
  return (body as { [TRANSCRIPT]?: Transcript })[TRANSCRIPT];
}

/** The caller text of a stand-in body, or undefined for a body parsed on the event loop. */
export function extractedText(body: Record<string, Json>): ExtractedText | undefined {
  return (body as { [EXTRACTED]?: ExtractedText })[EXTRACTED];
}

function embeddingTexts(input: Json): string[] {
  if (typeof input === "string") return [input];
  return Array.isArray(input) ? input.filter((item): item is string => typeof item === "string") : [];
}
