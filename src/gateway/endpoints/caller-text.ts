/**
 * The caller's text in each endpoint's request, and the text of an answer: what guardrails read
 * and usage limits count. Every piece of caller text — the system prompt or instructions, message
 * and content-block text, and tool results. Images, audio and files are not text, and are left out.
 */

type Json = unknown;

const isRecord = (value: Json): value is Record<string, Json> => typeof value === "object" && value !== null && !Array.isArray(value);

/** A Messages API request (Anthropic style). */
export function messagesText(body: Record<string, Json>): string[] {
  const parts: string[] = [];
  collectBlocks(body.system, parts);
  if (Array.isArray(body.messages)) {
    for (const message of body.messages) if (isRecord(message)) collectBlocks(message.content, parts);
  }
  return parts;
}

/** A Responses API request (OpenAI style). */
export function responsesText(body: Record<string, Json>): string[] {
  const parts: string[] = [];
  if (typeof body.instructions === "string") parts.push(body.instructions);
  collectBlocks(body.input, parts);
  return parts;
}

/** A Chat Completions request: every message's content, system and tool messages included. */
export function chatText(body: Record<string, Json>): string[] {
  const parts: string[] = [];
  collectBlocks(body.messages, parts);
  return parts;
}

// --- The operator's own text --------------------------------------------------------------------

/**
 * How many of the first parts of `messagesText` are the operator's own: the system prompt. The
 * prompt-injection guardrail reads them with its rules only (docs/guardrails.md, the input text).
 */
export function messagesOperatorParts(body: Record<string, Json>): number {
  const parts: string[] = [];
  collectBlocks(body.system, parts);
  return parts.length;
}

/** The same for `responsesText`: the instructions, then the input's leading system or developer messages. */
export function responsesOperatorParts(body: Record<string, Json>): number {
  return (typeof body.instructions === "string" ? 1 : 0) + (Array.isArray(body.input) ? leadingOperatorParts(body.input) : 0);
}

/** The same for `chatText`: the leading system or developer messages. */
export function chatOperatorParts(body: Record<string, Json>): number {
  return Array.isArray(body.messages) ? leadingOperatorParts(body.messages) : 0;
}

/** The parts of a message list's leading run of system and developer messages. */
function leadingOperatorParts(messages: readonly Json[]): number {
  const parts: string[] = [];
  for (const message of messages) {
    if (!isRecord(message) || (message.role !== "system" && message.role !== "developer")) break;
    collectBlocks(message, parts);
  }
  return parts.length;
}

/** The prompt of an image generation request. */
export function imagesText(body: Record<string, Json>): string[] {
  return typeof body.prompt === "string" ? [body.prompt] : [];
}

/** The texts of an embeddings request (token arrays are not text). */
export function embeddingsText(body: Record<string, Json>): string[] {
  const input = body.input;
  if (typeof input === "string") return [input];
  return Array.isArray(input) ? input.filter((item): item is string => typeof item === "string") : [];
}

/** The text of an answer already parsed: Messages content blocks, Responses output items, or chat choices. */
export function answerText(parsed: Json): string[] {
  if (!isRecord(parsed)) return [];
  const parts: string[] = [];
  collectBlocks(parsed.content, parts);
  collectBlocks(parsed.output, parts);
  if (Array.isArray(parsed.choices)) {
    for (const choice of parsed.choices) if (isRecord(choice) && isRecord(choice.message)) collectBlocks(choice.message.content, parts);
  }
  return parts;
}

/**
 * Text blocks wherever they sit: a plain string; `text` of text blocks (text, input_text,
 * output_text); tool results (`content` of tool_result blocks and chat tool messages, `output` of
 * function-call outputs); and items that carry `content` of their own, such as Responses input
 * messages.
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

// --- Rewriting the same text in place (redaction) ----------------------------------------------

/** Replaces a piece of text; returns it unchanged when there is nothing to replace. */
export type TextRewrite = (text: string) => string;

/** A Messages API request's caller text, rewritten where `messagesText` reads it. */
export function rewriteMessagesText(body: Record<string, Json>, rewrite: TextRewrite): void {
  rewriteBlocks(body, "system", rewrite);
  if (Array.isArray(body.messages)) {
    for (const message of body.messages) if (isRecord(message)) rewriteBlocks(message, "content", rewrite);
  }
}

/** A Responses API request's caller text, rewritten where `responsesText` reads it. */
export function rewriteResponsesText(body: Record<string, Json>, rewrite: TextRewrite): void {
  if (typeof body.instructions === "string") body.instructions = rewrite(body.instructions);
  rewriteBlocks(body, "input", rewrite);
}

/** A Chat Completions request's caller text, rewritten where `chatText` reads it. */
export function rewriteChatText(body: Record<string, Json>, rewrite: TextRewrite): void {
  rewriteBlocks(body, "messages", rewrite);
}

/** An image generation's prompt, rewritten. */
export function rewriteImagesText(body: Record<string, Json>, rewrite: TextRewrite): void {
  if (typeof body.prompt === "string") body.prompt = rewrite(body.prompt);
}

/** An answer's text, rewritten where `answerText` reads it. */
export function rewriteAnswerText(parsed: Json, rewrite: TextRewrite): void {
  if (!isRecord(parsed)) return;
  rewriteBlocks(parsed, "content", rewrite);
  rewriteBlocks(parsed, "output", rewrite);
  if (Array.isArray(parsed.choices)) {
    for (const choice of parsed.choices) if (isRecord(choice) && isRecord(choice.message)) rewriteBlocks(choice.message, "content", rewrite);
  }
}

/**
 * `holder[field]` rewritten wherever collectBlocks reads text in it: the same places, so that
 * what the guardrails read is exactly what is rewritten. Its own stack, as collectBlocks has.
 */
function rewriteBlocks(holder: Record<string, Json> | Json[], field: string | number, rewrite: TextRewrite): void {
  const pending: [Record<string, Json> | Json[], string | number][] = [[holder, field]];
  while (pending.length > 0) {
    const [parent, name] = pending.pop()!;
    const item = (parent as Record<string | number, Json>)[name];
    if (typeof item === "string") {
      (parent as Record<string | number, Json>)[name] = rewrite(item);
    } else if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) pending.push([item, i]);
    } else if (isRecord(item)) {
      if (typeof item.text === "string") item.text = rewrite(item.text);
      if (typeof item.output === "string") item.output = rewrite(item.output);
      if ("content" in item) pending.push([item, "content"]);
    }
  }
}
