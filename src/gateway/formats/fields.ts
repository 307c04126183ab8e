/**
 * The small readers the three wire formats share: typed access to a caller's request fields
 * (messages.ts, responses.ts, chat.ts), the usage counts of a provider's answer (responses-stream.ts,
 * chat-stream.ts), and images given by URL.
 */
import { GatewayError, unreadableAnswer } from "../dataplane/errors.ts";
import type { ImageSource } from "./canonical.ts";

export type Json = Record<string, unknown>;

export const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

/** A caller's request that is not what its format allows: a 400. */
export const malformed = (message: string) => new GatewayError(400, message);

// Request fields. Null counts as absent, as the SDKs' nullable fields and OpenAI's own API take it.

export const present = (value: unknown): boolean => value !== undefined && value !== null;

export function requiredString(value: unknown, path: string): string {
  if (typeof value !== "string") throw malformed(`'${path}' must be a string.`);
  return value;
}

export function optionalString(value: unknown, path: string): string | null {
  return present(value) ? requiredString(value, path) : null;
}

export function optionalNumber(value: unknown, path: string): number | null {
  if (!present(value)) return null;
  if (typeof value !== "number" || !Number.isFinite(value)) throw malformed(`'${path}' must be a number.`);
  return value;
}

export function optionalBoolean(value: unknown, path: string): boolean | null {
  if (!present(value)) return null;
  if (typeof value !== "boolean") throw malformed(`'${path}' must be a boolean.`);
  return value;
}

export function requiredObject(value: unknown, path: string): Json {
  if (!isObject(value)) throw malformed(`'${path}' must be an object.`);
  return value;
}

export function optionalObject(value: unknown, path: string): Json | null {
  return present(value) ? requiredObject(value, path) : null;
}

export function optionalArray(value: unknown, path: string): unknown[] | null {
  if (!present(value)) return null;
  if (!Array.isArray(value)) throw malformed(`'${path}' must be an array.`);
  return value;
}

// Usage counts of OpenAI's answers (responses and chat completions)

/** A count: a finite number, not negative; null when the value is none. */
export const count = (value: unknown): number | null => (typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : null);

/**
 * A detail count the provider may leave out (compatible servers often do): absent or null is 0,
 * but a present one must be a count.
 */
export function detailCount(details: unknown, key: string): number {
  if (!isObject(details) || !present(details[key])) return 0;
  const n = count(details[key]);
  if (n === null) throw unreadableAnswer(`the usage's '${key}' is not a count.`);
  return n;
}

// Images

/** An image URL as canonical: a `data:<mediaType>;base64,<data>` URL is the image itself; any other stays a URL. */
export function imageSourceFromUrl(url: string): ImageSource {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (match !== null) return { kind: "base64", mediaType: match[1]!, data: match[2]! };
  return { kind: "url", url };
}

/** A canonical image as a URL: an inline image becomes a data URL. */
export function imageUrl(source: ImageSource): string {
  return source.kind === "url" ? source.url : `data:${source.mediaType};base64,${source.data}`;
}
