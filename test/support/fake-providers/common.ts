import { createHash } from "node:crypto";

/** Every timestamp the fakes write: 2026-01-01T00:00:00Z. Fixed, so that answers depend only on the request. */
export const FAKE_EPOCH_SECONDS = 1_767_225_600;
export const FAKE_EPOCH_ISO = "2026-01-01T00:00:00Z";

/** Requests with a bigger body get 413. */
export const MAX_BODY_BYTES = 8 * 1024 * 1024;

/** A 1×1 transparent PNG. */
export const TINY_PNG_BASE64 =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

export const DEFAULT_EVENTS = 3;
export const DEFAULT_INPUT_TOKENS = 11;
export const DEFAULT_OUTPUT_TOKENS = 7;

/** Hex SHA-256 of the parts, joined by newlines: the seed of every id a fake makes. */
export function digest(...parts: string[]): string {
  return createHash("sha256").update(parts.join("\n")).digest("hex");
}

/** One server-sent event, framed as the providers frame it. */
export function sseEvent(type: string, data: unknown): string {
  return `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The same event with its JSON cut in half: still SSE-framed, but its data does not parse. */
export function malformedSseEvent(type: string, data: unknown): string {
  const json = JSON.stringify(data);
  return `event: ${type}\ndata: ${json.slice(0, Math.max(1, Math.floor(json.length / 2)))}\n\n`;
}

/** One frame of a stream as written, and the same frame with its JSON cut in half (what malformedSse sends). */
export interface SseFrame {
  text: string;
  malformed: string;
}

/** `event: <type>\ndata: <json>\n\n`, as Anthropic and the Responses API frame their events. */
export function namedFrame(type: string, data: unknown): SseFrame {
  return { text: sseEvent(type, data), malformed: malformedSseEvent(type, data) };
}

/** `data: <json>\n\n` with no event name, as Chat Completions frames its chunks. */
export function dataFrame(data: unknown): SseFrame {
  const json = JSON.stringify(data);
  return { text: `data: ${json}\n\n`, malformed: `data: ${json.slice(0, Math.max(1, Math.floor(json.length / 2)))}\n\n` };
}

/** The end of a Chat Completions stream. */
export const DONE_FRAME: SseFrame = { text: "data: [DONE]\n\n", malformed: "data: [DO\n\n" };

/** Splits text into `parts` pieces by code point, as evenly as possible; pieces are empty when parts > length. */
export function splitText(text: string, parts: number): string[] {
  const chars = Array.from(text);
  const pieces: string[] = [];
  for (let i = 0; i < parts; i++) {
    pieces.push(chars.slice(Math.floor((i * chars.length) / parts), Math.floor(((i + 1) * chars.length) / parts)).join(""));
  }
  return pieces;
}

/** JSON with object keys sorted at every level: the same for the same request, whatever its whitespace or key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (isRecord(value)) {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A JSON value's type as OpenAI's "Invalid type" messages name it ("an array", "a string"...). */
export function jsonTypeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "string") return "a string";
  if (typeof value === "number") return Number.isInteger(value) ? "an integer" : "a decimal";
  if (typeof value === "boolean") return "a boolean";
  return typeof value;
}
