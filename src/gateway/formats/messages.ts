/**
 * Anthropic's messages format, its requests: read from a caller on /v1/messages and written for an
 * Anthropic provider. The answers and streams are in messages-stream.ts.
 */
import { untranslatable } from "../dataplane/errors.ts";
import type { CanonicalRequest, FunctionTool, ImageSource, Message, Part, ToolChoice, ToolResultContent } from "./canonical.ts";
import {
  imageSourceFromUrl,
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
import { jsonText, messagesStreamReader, messagesStreamWriter, readMessagesAnswer, toolInput, writeMessagesAnswer } from "./messages-stream.ts";

/** A field, anywhere in the request, that canonical form cannot carry. */
const refuseField = (path: string) => untranslatable(`the messages API field '${path}' cannot be carried to the provider's format.`);

// Reading: the fields an object may hold. The typed readers (null counts as absent) are in fields.ts.

/**
 * Fields an object may carry besides those read: each with the values that change nothing in the
 * answer. Any other field, or another value, is refused rather than dropped; null, anywhere, is
 * the same as absent.
 */
type Harmless = Record<string, (value: unknown) => boolean>;

const anyValue = () => true;
const emptyArray = (value: unknown) => Array.isArray(value) && value.length === 0;
/** cache_control only says what Anthropic may cache; the answer is the same. */
const cacheControl: Harmless = { cache_control: anyValue };

function checkFields(object: Json, path: string, read: ReadonlySet<string>, harmless: Harmless): void {
  for (const [key, value] of Object.entries(object)) {
    if (read.has(key) || !present(value)) continue;
    // Own keys only: 'constructor' or 'toString' must not find Object's.
    if (Object.hasOwn(harmless, key) && harmless[key]!(value)) continue;
    throw refuseField(path === "" ? key : `${path}.${key}`);
  }
}

// Reading: the top-level fields

/** Fields read below, each by its own code. */
const translated = new Set([
  "model",
  "max_tokens",
  "system",
  "messages",
  "tools",
  "tool_choice",
  "temperature",
  "top_p",
  "top_k",
  "stop_sequences",
  "stream",
  "metadata",
  "thinking",
]);

/** service_tier picks Anthropic's capacity, not the answer (docs/gateway.md lists it). */
const topLevelHarmless: Harmless = { service_tier: anyValue };

function readMaxTokens(value: unknown): number | null {
  if (!present(value)) return null;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) throw malformed("'max_tokens' must be a non-negative integer.");
  if (value === 0) throw untranslatable("'max_tokens' 0 only warms Anthropic's prompt cache, which the provider's format cannot do.");
  return value;
}

/** Only thinking turned off can be carried: canonical answers have no thinking blocks to give back. */
function checkThinking(value: unknown): void {
  const thinking = optionalObject(value, "thinking");
  if (thinking === null) return;
  const type = requiredString(thinking.type, "thinking.type");
  if (type !== "disabled") throw untranslatable(`extended thinking ('thinking' of type '${type}') cannot be carried to the provider's format.`);
}

function readStopSequences(value: unknown): string[] {
  const sequences = optionalArray(value, "stop_sequences") ?? [];
  if (!sequences.every((item) => typeof item === "string")) throw malformed("'stop_sequences' must be an array of strings.");
  return sequences as string[];
}

/** metadata.user_id is the end user; Anthropic's metadata holds nothing else. */
function readUser(value: unknown): string | null {
  const metadata = optionalObject(value, "metadata");
  return metadata === null ? null : optionalString(metadata.user_id, "metadata.user_id");
}

// Reading: tools

const customToolFields = new Set(["type", "name", "description", "input_schema", "strict"]);

const customToolHarmless: Harmless = {
  ...cacheControl,
  // Only how finely the input is streamed, not what it is.
  eager_input_streaming: anyValue,
  defer_loading: (value) => value === false,
  input_examples: emptyArray,
  allowed_callers: (value) => Array.isArray(value) && value.every((caller) => caller === "direct"),
};

function readTool(value: unknown, path: string): FunctionTool {
  const tool = requiredObject(value, path);
  if (present(tool.type) && tool.type !== "custom") {
    if (typeof tool.type === "string") throw untranslatable(`the tool type '${tool.type}' is a built-in tool of Anthropic's messages API.`);
    throw malformed(`'${path}.type' must be a string.`);
  }
  checkFields(tool, path, customToolFields, customToolHarmless);
  return {
    name: requiredString(tool.name, `${path}.name`),
    description: optionalString(tool.description, `${path}.description`),
    parameters: requiredObject(tool.input_schema, `${path}.input_schema`),
    strict: optionalBoolean(tool.strict, `${path}.strict`),
  };
}

function readTools(value: unknown): FunctionTool[] {
  return (optionalArray(value, "tools") ?? []).map((tool, i) => readTool(tool, `tools[${i}]`));
}

/**
 * Anthropic's tool_choice, and whether parallel calls are allowed: disable_parallel_tool_use true
 * forbids them; false or absent is Anthropic's default (allowed), so the caller said nothing new.
 */
function readToolChoice(value: unknown): { toolChoice: ToolChoice | null; parallelToolCalls: boolean | null } {
  const choice = optionalObject(value, "tool_choice");
  if (choice === null) return { toolChoice: null, parallelToolCalls: null };
  const disable = optionalBoolean(choice.disable_parallel_tool_use, "tool_choice.disable_parallel_tool_use");
  const parallelToolCalls = disable === true ? false : null;
  switch (choice.type) {
    case "auto":
      return { toolChoice: { type: "auto" }, parallelToolCalls };
    case "any":
      return { toolChoice: { type: "required" }, parallelToolCalls };
    case "none":
      return { toolChoice: { type: "none" }, parallelToolCalls };
    case "tool":
      return { toolChoice: { type: "tool", name: requiredString(choice.name, "tool_choice.name") }, parallelToolCalls };
    default:
      throw malformed("'tool_choice.type' must be 'auto', 'any', 'tool' or 'none'.");
  }
}

// Reading: content blocks

const textFields = new Set(["type", "text"]);
/** Citations only come back from Anthropic's own documents and searches: an empty list says nothing. */
const textHarmless: Harmless = { ...cacheControl, citations: emptyArray };

function readText(block: Json, path: string): string {
  checkFields(block, path, textFields, textHarmless);
  return requiredString(block.text, `${path}.text`);
}

function readImageSource(value: unknown, path: string): ImageSource {
  const source = requiredObject(value, path);
  switch (source.type) {
    case "base64":
      return { kind: "base64", mediaType: requiredString(source.media_type, `${path}.media_type`), data: requiredString(source.data, `${path}.data`) };
    case "url":
      return imageSourceFromUrl(requiredString(source.url, `${path}.url`));
    case "file":
      throw untranslatable("an image given by its Files API id cannot be carried to the provider's format.");
    default:
      throw malformed(`'${path}.type' must be 'base64', 'url' or 'file'.`);
  }
}

const imageFields = new Set(["type", "source"]);
/** An empty transformations object is, as Anthropic documents, the same as none. */
const imageHarmless: Harmless = { ...cacheControl, transformations: (value) => isObject(value) && Object.keys(value).length === 0 };

function readImage(block: Json, path: string): Extract<Part, { type: "image" }> {
  checkFields(block, path, imageFields, imageHarmless);
  return { type: "image", source: readImageSource(block.source, `${path}.source`) };
}

const toolUseFields = new Set(["type", "id", "name", "input"]);
/** An answer's tool_use blocks, given back as they came, say the model itself called the tool. */
const toolUseHarmless: Harmless = { ...cacheControl, caller: (value) => isObject(value) && value.type === "direct", toolset_name: () => false };

function readToolUse(block: Json, path: string): Part {
  checkFields(block, path, toolUseFields, toolUseHarmless);
  const id = requiredString(block.id, `${path}.id`);
  const name = requiredString(block.name, `${path}.name`);
  const json = jsonText(requiredObject(block.input, `${path}.input`));
  if (json === null) throw malformed(`'${path}.input' is nested too deeply.`);
  return { type: "tool_call", id, name, arguments: json };
}

const unknownBlock = (type: string) => untranslatable(`the content block type '${type}' of Anthropic's messages API has no equivalent in the provider's format.`);

function blockType(value: unknown, path: string): { block: Json; type: string } {
  const block = requiredObject(value, path);
  return { block, type: requiredString(block.type, `${path}.type`) };
}

function readToolResultContent(value: unknown, path: string): ToolResultContent {
  if (!present(value)) return "";
  if (typeof value === "string") return value;
  if (!Array.isArray(value)) throw malformed(`'${path}' must be a string or an array of content blocks.`);
  return value.map((item, i) => {
    const { block, type } = blockType(item, `${path}[${i}]`);
    if (type === "text") return { type: "text", text: readText(block, `${path}[${i}]`) };
    if (type === "image") return readImage(block, `${path}[${i}]`);
    throw unknownBlock(type);
  });
}

const toolResultFields = new Set(["type", "tool_use_id", "content", "is_error"]);
const toolResultHarmless: Harmless = { ...cacheControl, toolset_name: () => false };

function readToolResult(block: Json, path: string): Part {
  checkFields(block, path, toolResultFields, toolResultHarmless);
  return {
    type: "tool_result",
    callId: requiredString(block.tool_use_id, `${path}.tool_use_id`),
    content: readToolResultContent(block.content, `${path}.content`),
    isError: optionalBoolean(block.is_error, `${path}.is_error`) ?? false,
  };
}

function readBlock(value: unknown, path: string, role: Message["role"]): Part {
  const { block, type } = blockType(value, path);
  switch (type) {
    case "text":
      return { type: "text", text: readText(block, path) };
    case "image":
      return readImage(block, path);
    case "tool_use":
      if (role !== "assistant") throw malformed(`'${path}' is a tool_use block, which only an assistant message can hold.`);
      return readToolUse(block, path);
    case "tool_result":
      if (role !== "user") throw malformed(`'${path}' is a tool_result block, which only a user message can hold.`);
      return readToolResult(block, path);
    default:
      // thinking, documents, search results, server tools' calls and results, container uploads.
      throw unknownBlock(type);
  }
}

function readContent(content: unknown, path: string, role: Message["role"]): Part[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  if (!Array.isArray(content)) throw malformed(`'${path}' must be a string or an array of content blocks.`);
  return content.map((block, i) => readBlock(block, `${path}[${i}]`, role));
}

/** The system prompt's content: a string, or text blocks. */
function readSystemContent(content: unknown, path: string): string[] {
  if (typeof content === "string") return [content];
  if (!Array.isArray(content)) throw malformed(`'${path}' must be a string or an array of text blocks.`);
  return content.map((item, i) => {
    const { block, type } = blockType(item, `${path}[${i}]`);
    if (type !== "text") throw malformed(`'${path}[${i}].type' must be 'text'.`);
    return readText(block, `${path}[${i}]`);
  });
}

// Reading: messages

const messageFields = new Set(["role", "content"]);

/**
 * Adds parts to the conversation, merged into the last message when it has the same role. One by
 * one: spreading a caller's huge content array into push() would overflow the call stack.
 */
function append(messages: Message[], role: Message["role"], parts: Part[]): void {
  const last = messages.at(-1);
  if (last === undefined || last.role !== role) messages.push({ role, content: parts });
  else for (const part of parts) last.content.push(part);
}

/** The messages; system messages (which the SDK allows among them) join the system prompt, in order. */
function readMessages(value: unknown, system: string[]): Message[] {
  if (!Array.isArray(value)) throw malformed("'messages' must be an array.");
  const messages: Message[] = [];
  value.forEach((item, i) => {
    const path = `messages[${i}]`;
    const message = requiredObject(item, path);
    checkFields(message, path, messageFields, {});
    const role = message.role;
    if (role === "system") for (const text of readSystemContent(message.content, `${path}.content`)) system.push(text);
    else if (role === "user" || role === "assistant") append(messages, role, readContent(message.content, `${path}.content`, role));
    else throw malformed(`'${path}.role' must be 'user', 'assistant' or 'system'.`);
  });
  return messages;
}

function readRequest(body: Json): CanonicalRequest {
  checkFields(body, "", translated, topLevelHarmless);
  checkThinking(body.thinking);
  const model = requiredString(body.model, "model");
  const system = present(body.system) ? readSystemContent(body.system, "system") : [];
  const messages = readMessages(body.messages, system);
  const { toolChoice, parallelToolCalls } = readToolChoice(body.tool_choice);
  return {
    model,
    system,
    messages,
    tools: readTools(body.tools),
    toolChoice,
    maxOutputTokens: readMaxTokens(body.max_tokens),
    temperature: optionalNumber(body.temperature, "temperature"),
    topP: optionalNumber(body.top_p, "top_p"),
    topK: optionalNumber(body.top_k, "top_k"),
    stopSequences: readStopSequences(body.stop_sequences),
    stream: optionalBoolean(body.stream, "stream") ?? false,
    // A messages stream always ends with its usage.
    streamUsage: true,
    parallelToolCalls,
    responseFormat: null,
    reasoningEffort: null,
    user: readUser(body.metadata),
  };
}

// Writing

function writeImage(source: ImageSource): Json {
  const written = source.kind === "url" ? { type: "url", url: source.url } : { type: "base64", media_type: source.mediaType, data: source.data };
  return { type: "image", source: written };
}

function writeToolResultPart(part: Extract<Part, { type: "text" | "image" }>): Json {
  return part.type === "text" ? { type: "text", text: part.text } : writeImage(part.source);
}

/** A string when it is one text; blocks otherwise (texts stay apart, as the caller sent them). */
function writeToolResultContent(content: ToolResultContent): string | Json[] {
  if (typeof content === "string") return content;
  const only = content[0];
  if (content.length === 1 && only!.type === "text") return only!.text;
  return content.map(writeToolResultPart);
}

function writeBlock(part: Part, role: Message["role"]): Json {
  switch (part.type) {
    case "text":
      return { type: "text", text: part.text };
    case "image":
      return writeImage(part.source);
    case "tool_call": {
      if (role !== "assistant") throw untranslatable("a tool call in a user message cannot be written for Anthropic's messages API.");
      const input = toolInput(part.arguments);
      if (input === null) throw untranslatable("a tool call's arguments are not a JSON object.");
      return { type: "tool_use", id: part.id, name: part.name, input };
    }
    case "tool_result": {
      if (role !== "user") throw untranslatable("a tool result in an assistant message cannot be written for Anthropic's messages API.");
      const block: Json = { type: "tool_result", tool_use_id: part.callId, content: writeToolResultContent(part.content) };
      if (part.isError) block.is_error = true;
      return block;
    }
  }
}

function writeMessage(message: Message): Json {
  const only = message.content[0];
  const content = message.content.length === 1 && only!.type === "text" ? only!.text : message.content.map((part) => writeBlock(part, message.role));
  return { role: message.role, content };
}

function writeTool(tool: FunctionTool): Json {
  const written: Json = { name: tool.name };
  if (tool.description !== null) written.description = tool.description;
  written.input_schema = tool.parameters;
  // Anthropic's strict tool use holds the model to the schema, as OpenAI's strict mode does.
  if (tool.strict !== null) written.strict = tool.strict;
  return written;
}

/**
 * Anthropic's tool_choice, with parallel calls forbidden when the caller forbade them. Without a
 * choice, forbidding them needs an explicit auto; without tools there is nothing to call at all,
 * and Anthropic refuses a tool_choice without tools, so nothing is written.
 */
function writeToolChoice(request: CanonicalRequest): Json | null {
  const disable = request.parallelToolCalls === false;
  const choice = request.toolChoice;
  if (choice === null) return disable && request.tools.length > 0 ? { type: "auto", disable_parallel_tool_use: true } : null;
  if (choice.type === "none") return { type: "none" };
  const written: Json = choice.type === "tool" ? { type: "tool", name: choice.name } : { type: choice.type === "required" ? "any" : "auto" };
  if (disable) written.disable_parallel_tool_use = true;
  return written;
}

function writeRequest(request: CanonicalRequest, defaultMaxTokens: number): Json {
  if (request.responseFormat !== null) throw untranslatable("Anthropic's messages API has no response_format.");
  if (request.reasoningEffort !== null) throw untranslatable("Anthropic's messages API has no reasoning effort.");
  const body: Json = { model: request.model, max_tokens: request.maxOutputTokens ?? defaultMaxTokens };
  if (request.system.length > 0) body.system = request.system.join("\n\n");
  body.messages = request.messages.map(writeMessage);
  if (request.tools.length > 0) body.tools = request.tools.map(writeTool);
  const toolChoice = writeToolChoice(request);
  if (toolChoice !== null) body.tool_choice = toolChoice;
  if (request.temperature !== null) body.temperature = request.temperature;
  if (request.topP !== null) body.top_p = request.topP;
  if (request.topK !== null) body.top_k = request.topK;
  if (request.stopSequences.length > 0) body.stop_sequences = request.stopSequences;
  if (request.stream) body.stream = true;
  if (request.user !== null) body.metadata = { user_id: request.user };
  return body;
}

export const messagesFormat: WireFormat = {
  name: "messages",
  readRequest,
  writeRequest,
  readAnswer: readMessagesAnswer,
  writeAnswer: writeMessagesAnswer,
  streamReader: messagesStreamReader,
  streamWriter: () => messagesStreamWriter(),
};
