import { Buffer } from "node:buffer";
import { GatewayError } from "../dataplane/errors.ts";
import type { CanonicalRequest } from "./canonical.ts";
import { chatFormat } from "./chat.ts";
import type { FormatName, WireFormat } from "./format.ts";
import { messagesFormat } from "./messages.ts";
import { responsesFormat } from "./responses.ts";

export const formats: Record<FormatName, WireFormat> = { messages: messagesFormat, responses: responsesFormat, chat: chatFormat };

/** A request translated for its provider, and what the caller's stream writer needs of it. */
export interface TranslatedRequest {
  body: Buffer;
  streamUsage: CanonicalRequest["streamUsage"];
}

/**
 * The caller's request, read in its format and written in the provider's under the upstream
 * model's name. Throws the 400s of the formats for what cannot be carried.
 */
export function translateRequest(body: Record<string, unknown>, from: FormatName, to: FormatName, model: string, defaultMaxTokens: number): TranslatedRequest {
  const request = formats[from].readRequest(body);
  const written = formats[to].writeRequest({ ...request, model }, defaultMaxTokens);
  return { body: Buffer.from(stringify(written)), streamUsage: request.streamUsage };
}

/** JSON text of a written request: a caller's schema nested past what JSON.stringify can walk is the caller's 400, not a 500. */
function stringify(written: Record<string, unknown>): string {
  try {
    return JSON.stringify(written);
  } catch (err) {
    if (err instanceof RangeError) throw new GatewayError(400, "The request is nested too deeply to be translated.");
    throw err;
  }
}
