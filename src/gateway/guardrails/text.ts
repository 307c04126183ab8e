/**
 * The caller text that guardrails read and usage limits count, for bodies parsed here and for the
 * stand-ins of bodies a worker parsed; and its cap. What the text of each endpoint is lives in its
 * spec (endpoints/specs.ts).
 */

import { Buffer } from "node:buffer";
import type { EndpointName, EndpointSpec } from "../endpoints/specs.ts";
import { endpointSpecs } from "../endpoints/specs.ts";
import { transcriptOf, type Transcript } from "../usage/transcript.ts";

type Json = unknown;

const isRecord = (value: Json): value is Record<string, Json> => typeof value === "object" && value !== null && !Array.isArray(value);

/** The caller text of a request: a stand-in's extracted text whole, or the spec's parts. */
export function callerText(spec: EndpointSpec, body: Record<string, Json>): string[] {
  const extracted = extractedText(body);
  return extracted ? [extracted.all] : spec.inputText(body);
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

/**
 * The parts, each whole, as far as `maxBytes` bytes of UTF-8 in all; the part the cap falls in is
 * cut on a character boundary, and the parts after it are left out (`truncated`).
 */
export function segmentsCapped(parts: readonly string[], maxBytes: number): { segments: string[]; truncated: boolean } {
  let units = 0;
  for (const part of parts) units += part.length;
  // A UTF-16 code unit is at most three bytes of UTF-8.
  if (units * 3 <= maxBytes) return { segments: [...parts], truncated: false };
  const segments: string[] = [];
  let left = maxBytes;
  for (const part of parts) {
    const bytes = Buffer.byteLength(part);
    if (bytes <= left) {
      segments.push(part);
      left -= bytes;
      continue;
    }
    const { read } = new TextEncoder().encodeInto(part, new Uint8Array(left));
    let end = read;
    // A high surrogate whose low half was cut off is not a character.
    const last = part.charCodeAt(end - 1);
    if (end > 0 && last >= 0xd800 && last <= 0xdbff) end -= 1;
    if (end > 0) segments.push(part.slice(0, end));
    return { segments, truncated: true };
  }
  return { segments, truncated: false };
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

/**
 * A parsed body, reduced to what the event loop reads: every top-level field, with objects and
 * arrays emptied (`{}`, `[]`: every check of a field's type or value answers as for the original)
 * and the caller-text fields left out; and the caller text. Embeddings keep `input` as their texts
 * joined, which usage limits count.
 */
export function summarize(body: Record<string, Json>, endpoint: EndpointName, maxTextBytes: number, withTranscript = false): BodySummary {
  const spec = endpointSpecs[endpoint];
  const parts = spec.inputText(body);
  // No prototype: a caller's "__proto__" field stays a field.
  const fields: Record<string, Json> = Object.create(null);
  for (const [name, value] of Object.entries(body)) {
    if (spec.textFields.includes(name)) continue;
    fields[name] = Array.isArray(value) ? [] : isRecord(value) ? {} : value;
  }
  const all = parts.join("");
  if (endpoint === "embeddings") fields.input = all;
  const summary: BodySummary = { fields, text: { all, capped: joinCapped(parts, maxTextBytes) } };
  if (withTranscript) summary.transcript = transcriptOf(body, spec.transcript);
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
