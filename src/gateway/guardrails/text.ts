/**
 * The text that guardrails read. Input: every piece of caller text in a request — the system
 * prompt or instructions, message and content-block text, and tool results. Output: the text of a
 * response that is not streamed. Images, audio and files are not text, and are left out.
 */

type Json = unknown;

const isRecord = (value: Json): value is Record<string, Json> => typeof value === "object" && value !== null && !Array.isArray(value);

/** The text parts of a Messages API request (Anthropic style). */
export function messagesInputText(body: Record<string, Json>): string[] {
  const parts: string[] = [];
  collectBlocks(body.system, parts);
  if (Array.isArray(body.messages)) {
    for (const message of body.messages) if (isRecord(message)) collectBlocks(message.content, parts);
  }
  return parts;
}

/** The text parts of a Responses API request (OpenAI style). */
export function responsesInputText(body: Record<string, Json>): string[] {
  const parts: string[] = [];
  if (typeof body.instructions === "string") parts.push(body.instructions);
  collectBlocks(body.input, parts);
  return parts;
}

/** The prompt of an image generation request. */
export function imagesInputText(body: Record<string, Json>): string[] {
  return typeof body.prompt === "string" ? [body.prompt] : [];
}

/**
 * Text blocks wherever they sit: a plain string; `text` of text blocks (text, input_text,
 * output_text); tool results (`content` of tool_result blocks, `output` of function-call
 * outputs); and items that carry `content` of their own, such as Responses input messages.
 */
function collectBlocks(value: Json, parts: string[]): void {
  if (typeof value === "string") {
    parts.push(value);
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) collectBlocks(item, parts);
    return;
  }
  if (!isRecord(value)) return;
  if (typeof value.text === "string") parts.push(value.text);
  if (typeof value.output === "string") parts.push(value.output);
  if ("content" in value) collectBlocks(value.content, parts);
}

/** The text of a non-streamed answer: Messages content blocks, or Responses output items. */
export function outputText(body: Buffer): string[] {
  let parsed: Json;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch {
    return [];
  }
  if (!isRecord(parsed)) return [];
  const parts: string[] = [];
  collectBlocks(parsed.content, parts);
  collectBlocks(parsed.output, parts);
  return parts;
}
