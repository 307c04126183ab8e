/**
 * OpenAI's chat completions format, its requests: read from a caller on /v1/chat/completions and
 * written for an OpenAI-compatible server that speaks only this format (vLLM, Ollama, TGI). The
 * answers and streams are in chat-stream.ts.
 */
import { untranslatable } from "../dataplane/errors.ts";
import type {
  CanonicalRequest,
  FunctionTool,
  Message,
  Part,
  ReasoningEffort,
  ResponseFormat,
  ToolChoice,
  ToolResultContent,
} from "./canonical.ts";
import { chatStreamReader, chatStreamWriter, readChatAnswer, writeChatAnswer } from "./chat-stream.ts";
import {
  imageSourceFromUrl,
  imageUrl,
  isObject,
  type Json,
  malformed,
  optionalArray,
  optionalBoolean,
  optionalNumber,
  optionalObject,
  optionalString,
  present,
  requiredObject,
  requiredString,
} from "./fields.ts";
import type { WireFormat } from "./format.ts";

export { chatStreamError } from "./chat-stream.ts";

/** A field of chat completions that canonical form cannot carry. */
const refuseField = (field: string) => untranslatable(`the chat completions field '${field}' cannot be carried to the provider's format.`);

// Reading: typed field access (the readers shared with the other formats are in fields.ts).

function positiveInteger(value: unknown, path: string): number | null {
  if (!present(value)) return null;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) throw malformed(`'${path}' must be a positive integer.`);
  return value;
}

// Reading: the top-level fields

/** Fields that change nothing in the answer, left out (docs/gateway.md lists them). */
const leftOut = new Set(["store", "metadata", "service_tier", "prompt_cache_key"]);

/** Fields read below, each by its own code. */
const translated = new Set([
  "model",
  "messages",
  "tools",
  "tool_choice",
  "max_completion_tokens",
  "max_tokens",
  "temperature",
  "top_p",
  "stop",
  "n",
  "stream",
  "stream_options",
  "parallel_tool_calls",
  "response_format",
  "reasoning_effort",
  "user",
  "safety_identifier",
]);

/** Refused when set (not null) to a value that changes the answer; the function says which values do not. */
const refusedUnless: Record<string, (value: unknown) => boolean> = {
  logprobs: (value) => value === false,
  top_logprobs: () => false,
  logit_bias: () => false,
  seed: () => false,
  frequency_penalty: (value) => value === 0,
  presence_penalty: (value) => value === 0,
  audio: () => false,
  modalities: (value) => Array.isArray(value) && value.length === 1 && value[0] === "text",
  prediction: () => false,
  web_search_options: () => false,
  functions: () => false,
  function_call: () => false,
  verbosity: () => false,
};

/** Every top-level field is translated, left out, or refused here. */
function checkFields(body: Json): void {
  for (const [field, value] of Object.entries(body)) {
    if (translated.has(field) || leftOut.has(field)) continue;
    const allowed = Object.hasOwn(refusedUnless, field) ? refusedUnless[field] : undefined;
    if (allowed === undefined) throw untranslatable(`the field '${field}' is not a chat completions field the gateway can translate.`);
    if (present(value) && !allowed(value)) throw refuseField(field);
  }
}

function readMaxOutputTokens(body: Json): number | null {
  return positiveInteger(body.max_completion_tokens, "max_completion_tokens") ?? positiveInteger(body.max_tokens, "max_tokens");
}

function readStop(value: unknown): string[] {
  if (!present(value)) return [];
  if (typeof value === "string") return [value];
  if (Array.isArray(value) && value.every((item) => typeof item === "string")) return value;
  throw malformed("'stop' must be a string or an array of strings.");
}

function checkN(value: unknown): void {
  if (!present(value) || value === 1) return;
  if (typeof value !== "number" || !Number.isInteger(value)) throw malformed("'n' must be an integer.");
  throw untranslatable("'n' above 1 asks for several answers, which only chat completions can give.");
}

function readStreamUsage(value: unknown): boolean {
  const options = optionalObject(value, "stream_options");
  if (options === null) return false;
  for (const key of Object.keys(options)) {
    // include_obfuscation pads chunks against side channels; it changes no answer.
    if (key !== "include_usage" && key !== "include_obfuscation") throw refuseField(`stream_options.${key}`);
  }
  return optionalBoolean(options.include_usage, "stream_options.include_usage") ?? false;
}

const efforts: ReadonlySet<string> = new Set<ReasoningEffort>(["minimal", "low", "medium", "high"]);

function readReasoningEffort(value: unknown): ReasoningEffort | null {
  const effort = optionalString(value, "reasoning_effort");
  if (effort === null) return null;
  if (!efforts.has(effort)) throw untranslatable(`the reasoning effort '${effort}' has no equivalent in the provider's format.`);
  return effort as ReasoningEffort;
}

function readResponseFormat(value: unknown): ResponseFormat | null {
  const format = optionalObject(value, "response_format");
  if (format === null || format.type === "text") return null;
  if (format.type === "json_object") return { type: "json_object" };
  if (format.type !== "json_schema") throw malformed("'response_format.type' must be 'text', 'json_object' or 'json_schema'.");
  const schema = requiredObject(format.json_schema, "response_format.json_schema");
  return {
    type: "json_schema",
    name: requiredString(schema.name, "response_format.json_schema.name"),
    schema: requiredObject(schema.schema, "response_format.json_schema.schema"),
    strict: optionalBoolean(schema.strict, "response_format.json_schema.strict"),
    description: optionalString(schema.description, "response_format.json_schema.description"),
  };
}

/** What OpenAI documents for a function without parameters: an empty parameter list. */
const noParameters = (): Json => ({ type: "object", properties: {} });

function readTool(value: unknown, path: string): FunctionTool {
  const tool = requiredObject(value, path);
  if (tool.type !== "function") {
    if (typeof tool.type === "string") throw untranslatable(`the tool type '${tool.type}' has no equivalent in the provider's format.`);
    throw malformed(`'${path}.type' must be a string.`);
  }
  const fn = requiredObject(tool.function, `${path}.function`);
  return {
    name: requiredString(fn.name, `${path}.function.name`),
    description: optionalString(fn.description, `${path}.function.description`),
    parameters: optionalObject(fn.parameters, `${path}.function.parameters`) ?? noParameters(),
    strict: optionalBoolean(fn.strict, `${path}.function.strict`),
  };
}

function readTools(value: unknown): FunctionTool[] {
  return (optionalArray(value, "tools") ?? []).map((tool, i) => readTool(tool, `tools[${i}]`));
}

function readToolChoice(value: unknown): ToolChoice | null {
  if (!present(value)) return null;
  if (value === "none" || value === "auto" || value === "required") return { type: value };
  if (!isObject(value)) throw malformed("'tool_choice' must be 'none', 'auto', 'required' or an object.");
  if (value.type === "function") {
    const fn = requiredObject(value.function, "tool_choice.function");
    return { type: "tool", name: requiredString(fn.name, "tool_choice.function.name") };
  }
  if (typeof value.type === "string") throw untranslatable(`the tool_choice of type '${value.type}' has no equivalent in the provider's format.`);
  throw malformed("'tool_choice.type' must be a string.");
}

// Reading: messages

const imageDetails = new Set(["auto", "low", "high", "original"]);

function readImagePart(part: Json, path: string): Part {
  const image = requiredObject(part.image_url, `${path}.image_url`);
  const url = requiredString(image.url, `${path}.image_url.url`);
  // The detail level only tunes how finely the provider looks; canonical form has no place for it.
  const detail = optionalString(image.detail, `${path}.image_url.detail`);
  if (detail !== null && !imageDetails.has(detail)) throw malformed(`'${path}.image_url.detail' must be 'auto', 'low', 'high' or 'original'.`);
  return { type: "image", source: imageSourceFromUrl(url) };
}

function partType(part: unknown, path: string): { part: Json; type: string } {
  const object = requiredObject(part, path);
  return { part: object, type: requiredString(object.type, `${path}.type`) };
}

function textOfPart(part: Json, path: string): string {
  return requiredString(part.text, `${path}.text`);
}

/** Content that may only be text: a string, or text parts (system, developer and tool messages). */
function readTextContent(content: unknown, path: string): string[] {
  if (typeof content === "string") return [content];
  if (!Array.isArray(content)) throw malformed(`'${path}' must be a string or an array of text parts.`);
  return content.map((item, i) => {
    const { part, type } = partType(item, `${path}[${i}]`);
    if (type !== "text") throw malformed(`'${path}[${i}].type' must be 'text'.`);
    return textOfPart(part, `${path}[${i}]`);
  });
}

function readUserContent(content: unknown, path: string): Part[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  if (!Array.isArray(content)) throw malformed(`'${path}' must be a string or an array of content parts.`);
  if (content.length === 0) throw malformed(`'${path}' must not be an empty array.`);
  return content.map((item, i): Part => {
    const { part, type } = partType(item, `${path}[${i}]`);
    if (type === "text") return { type: "text", text: textOfPart(part, `${path}[${i}]`) };
    if (type === "image_url") return readImagePart(part, `${path}[${i}]`);
    throw untranslatable(`a user message part of type '${type}' has no equivalent in the provider's format.`);
  });
}

function readToolCall(value: unknown, path: string): Part {
  const call = requiredObject(value, path);
  if (call.type !== "function") {
    if (typeof call.type === "string") throw untranslatable(`an assistant tool call of type '${call.type}' has no equivalent in the provider's format.`);
    throw malformed(`'${path}.type' must be 'function'.`);
  }
  const fn = requiredObject(call.function, `${path}.function`);
  return {
    type: "tool_call",
    id: requiredString(call.id, `${path}.id`),
    name: requiredString(fn.name, `${path}.function.name`),
    arguments: requiredString(fn.arguments, `${path}.function.arguments`),
  };
}

function readAssistantTexts(content: unknown, path: string): string[] {
  if (!present(content)) return [];
  if (typeof content === "string") return [content];
  if (!Array.isArray(content)) throw malformed(`'${path}' must be a string, null or an array of text or refusal parts.`);
  return content.map((item, i) => {
    const { part, type } = partType(item, `${path}[${i}]`);
    if (type === "text") return textOfPart(part, `${path}[${i}]`);
    if (type === "refusal") return requiredString(part.refusal, `${path}[${i}].refusal`);
    throw malformed(`'${path}[${i}].type' must be 'text' or 'refusal'.`);
  });
}

/**
 * Text first, then the refusal, then the tool calls. Empty texts say nothing and are left out,
 * but a message keeps one (empty) text when it would otherwise hold nothing at all.
 */
function readAssistant(message: Json, path: string): Part[] {
  if (present(message.audio)) throw untranslatable("an assistant message's 'audio' (a reference to earlier audio output) has no equivalent in the provider's format.");
  if (present(message.function_call)) throw untranslatable("an assistant message's legacy 'function_call' has no equivalent in the provider's format; use 'tool_calls'.");
  const texts = readAssistantTexts(message.content, `${path}.content`);
  const refusal = optionalString(message.refusal, `${path}.refusal`);
  if (refusal !== null) texts.push(refusal);
  const calls: Part[] = (optionalArray(message.tool_calls, `${path}.tool_calls`) ?? []).map((call, i) => readToolCall(call, `${path}.tool_calls[${i}]`));
  const parts: Part[] = texts.filter((text) => text !== "").map((text): Part => ({ type: "text", text }));
  const all = parts.concat(calls);
  return all.length > 0 ? all : [{ type: "text", text: "" }];
}

function readToolMessage(message: Json, path: string): Part {
  const texts = readTextContent(message.content, `${path}.content`);
  const content: ToolResultContent = typeof message.content === "string" ? texts[0]! : texts.map((text) => ({ type: "text", text }));
  // Chat completions has no error flag on tool results.
  return { type: "tool_result", callId: requiredString(message.tool_call_id, `${path}.tool_call_id`), content, isError: false };
}

/** The fields each role may carry; any other is refused rather than dropped. */
const messageFields: Record<string, ReadonlySet<string>> = {
  system: new Set(["role", "content"]),
  developer: new Set(["role", "content"]),
  user: new Set(["role", "content"]),
  assistant: new Set(["role", "content", "refusal", "tool_calls", "audio", "function_call"]),
  tool: new Set(["role", "content", "tool_call_id"]),
};

function checkMessageFields(message: Json, role: string): void {
  const allowed = messageFields[role]!;
  for (const [key, value] of Object.entries(message)) {
    if (allowed.has(key)) continue;
    // An answer's message sent back as history, as OpenAI code does, carries what the answer had:
    // citations the text already holds, and the SDK's parse result. Neither is input.
    if (role === "assistant" && (key === "annotations" || key === "parsed")) continue;
    // `name` tells participants apart; the other formats have no such thing.
    if (key === "name" && !present(value)) continue;
    throw untranslatable(`the chat completions message field '${key}' has no equivalent in the provider's format.`);
  }
}

/** Adds parts to the conversation, merged into the last message when it has the same role. */
function append(messages: Message[], role: Message["role"], parts: Part[]): void {
  const last = messages.at(-1);
  // A loop, not push(...parts): spreading a caller's long array can overflow the stack.
  if (last !== undefined && last.role === role) for (const part of parts) last.content.push(part);
  else messages.push({ role, content: parts });
}

function readMessages(value: unknown): { system: string[]; messages: Message[] } {
  if (!Array.isArray(value)) throw malformed("'messages' must be an array.");
  const system: string[] = [];
  const messages: Message[] = [];
  value.forEach((item, i) => {
    const path = `messages[${i}]`;
    const message = requiredObject(item, path);
    const role = requiredString(message.role, `${path}.role`);
    if (role === "function") throw untranslatable("a message with role 'function' (legacy function calling) has no equivalent in the provider's format; use 'tool' messages.");
    if (!Object.hasOwn(messageFields, role)) throw malformed(`'${path}.role' must be 'system', 'developer', 'user', 'assistant' or 'tool'.`);
    checkMessageFields(message, role);
    if (role === "system" || role === "developer") {
      for (const text of readTextContent(message.content, `${path}.content`)) if (text !== "") system.push(text);
    }
    else if (role === "user") append(messages, "user", readUserContent(message.content, `${path}.content`));
    else if (role === "assistant") append(messages, "assistant", readAssistant(message, path));
    else append(messages, "user", [readToolMessage(message, path)]);
  });
  return { system, messages };
}

function readRequest(body: Json): CanonicalRequest {
  checkFields(body);
  checkN(body.n);
  const model = requiredString(body.model, "model");
  const { system, messages } = readMessages(body.messages);
  return {
    model,
    system,
    messages,
    tools: readTools(body.tools),
    toolChoice: readToolChoice(body.tool_choice),
    maxOutputTokens: readMaxOutputTokens(body),
    temperature: optionalNumber(body.temperature, "temperature"),
    topP: optionalNumber(body.top_p, "top_p"),
    topK: null,
    stopSequences: readStop(body.stop),
    stream: optionalBoolean(body.stream, "stream") ?? false,
    streamUsage: readStreamUsage(body.stream_options),
    parallelToolCalls: optionalBoolean(body.parallel_tool_calls, "parallel_tool_calls"),
    responseFormat: readResponseFormat(body.response_format),
    reasoningEffort: readReasoningEffort(body.reasoning_effort),
    // safety_identifier is OpenAI's newer name for the same end-user identifier.
    user: optionalString(body.user, "user") ?? optionalString(body.safety_identifier, "safety_identifier"),
  };
}

// Writing

function toolResultText(content: ToolResultContent): string {
  if (typeof content === "string") return content;
  return content
    .map((part) => {
      if (part.type === "image") throw untranslatable("a tool result with images cannot be sent as a chat completions tool message.");
      return part.text;
    })
    .join("\n\n");
}

function userPart(part: Extract<Part, { type: "text" | "image" }>): Json {
  if (part.type === "text") return { type: "text", text: part.text };
  return { type: "image_url", image_url: { url: imageUrl(part.source) } };
}

/**
 * A user message as chat messages: its tool results as tool messages, its other parts as one user
 * message placed where the first of them was.
 */
function writeUser(content: Part[]): Json[] {
  const written: Json[] = [];
  const others: Array<Extract<Part, { type: "text" | "image" }>> = [];
  let userAt = -1;
  for (const part of content) {
    if (part.type === "tool_result") written.push({ role: "tool", tool_call_id: part.callId, content: toolResultText(part.content) });
    else if (part.type === "tool_call") throw untranslatable("a user message cannot hold a tool call in chat completions.");
    else {
      if (userAt === -1) userAt = written.length;
      others.push(part);
    }
  }
  if (userAt !== -1) {
    const only = others[0]!;
    const userContent = others.length === 1 && only.type === "text" ? only.text : others.map(userPart);
    written.splice(userAt, 0, { role: "user", content: userContent });
  }
  return written;
}

function writeAssistant(content: Part[]): Json {
  const texts: string[] = [];
  const calls: Json[] = [];
  for (const part of content) {
    if (part.type === "text") texts.push(part.text);
    else if (part.type === "tool_call") calls.push({ id: part.id, type: "function", function: { name: part.name, arguments: part.arguments } });
    else if (part.type === "image") throw untranslatable("an assistant message with an image cannot be sent to chat completions.");
    else throw untranslatable("an assistant message cannot hold a tool result in chat completions.");
  }
  const message: Json = { role: "assistant", content: texts.length > 0 ? texts.join("") : null };
  if (calls.length > 0) message.tool_calls = calls;
  return message;
}

function writeMessages(request: CanonicalRequest): Json[] {
  const written: Json[] = [];
  if (request.system.length > 0) written.push({ role: "system", content: request.system.join("\n\n") });
  for (const message of request.messages) {
    if (message.role === "user") for (const each of writeUser(message.content)) written.push(each);
    else written.push(writeAssistant(message.content));
  }
  return written;
}

function writeTool(tool: FunctionTool): Json {
  const fn: Json = { name: tool.name };
  if (tool.description !== null) fn.description = tool.description;
  fn.parameters = tool.parameters;
  if (tool.strict !== null) fn.strict = tool.strict;
  return { type: "function", function: fn };
}

function writeToolChoice(choice: ToolChoice): Json | string {
  return choice.type === "tool" ? { type: "function", function: { name: choice.name } } : choice.type;
}

function writeResponseFormat(format: ResponseFormat): Json {
  if (format.type === "json_object") return { type: "json_object" };
  const schema: Json = { name: format.name };
  if (format.description !== null) schema.description = format.description;
  schema.schema = format.schema;
  if (format.strict !== null) schema.strict = format.strict;
  return { type: "json_schema", json_schema: schema };
}

function writeRequest(request: CanonicalRequest): Json {
  if (request.topK !== null) throw untranslatable("'top_k' has no equivalent in chat completions.");
  const body: Json = { model: request.model, messages: writeMessages(request) };
  if (request.tools.length > 0) body.tools = request.tools.map(writeTool);
  if (request.toolChoice !== null) body.tool_choice = writeToolChoice(request.toolChoice);
  // max_tokens, not max_completion_tokens: the one every compatible server takes.
  if (request.maxOutputTokens !== null) body.max_tokens = request.maxOutputTokens;
  if (request.temperature !== null) body.temperature = request.temperature;
  if (request.topP !== null) body.top_p = request.topP;
  if (request.stopSequences.length > 0) body.stop = request.stopSequences;
  if (request.stream) {
    body.stream = true;
    // Always: the gateway counts the usage of every call.
    body.stream_options = { include_usage: true };
  }
  if (request.parallelToolCalls !== null) body.parallel_tool_calls = request.parallelToolCalls;
  if (request.responseFormat !== null) body.response_format = writeResponseFormat(request.responseFormat);
  if (request.reasoningEffort !== null) body.reasoning_effort = request.reasoningEffort;
  if (request.user !== null) body.user = request.user;
  return body;
}

export const chatFormat: WireFormat = {
  name: "chat",
  readRequest,
  writeRequest,
  readAnswer: readChatAnswer,
  writeAnswer: writeChatAnswer,
  streamReader: chatStreamReader,
  streamWriter: chatStreamWriter,
};
