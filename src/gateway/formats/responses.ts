/**
 * OpenAI's responses format (POST /v1/responses): requests read and written here, answers and
 * streams in responses-stream.ts. What canonical form cannot carry is refused by name: the
 * built-in tools, the stateful references (previous_response_id, conversation, prompt), the
 * item types other than messages and function calls, and the options no other format has.
 */
import { untranslatable, unreadableAnswer } from "../dataplane/errors.ts";
import type {
  AnswerPart,
  CanonicalAnswer,
  CanonicalRequest,
  FunctionTool,
  ImageSource,
  Message,
  Part,
  ReasoningEffort,
  ResponseFormat,
  ToolChoice,
  ToolResultContent,
} from "./canonical.ts";
import { noUsage } from "./canonical.ts";
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
import {
  finishedResponse,
  functionCallItem,
  messageItem,
  outputText,
  readStopReason,
  readUsage,
  ResponsesStreamReader,
  ResponsesStreamWriter,
} from "./responses-stream.ts";

const API = "OpenAI's responses API";

const refusedField = (name: string) => untranslatable(`the field '${name}' of ${API} has no equivalent.`);

// Reading: field checks (the readers shared with the other formats are in fields.ts)

function optionalInteger(value: unknown, path: string): number | null {
  if (!present(value)) return null;
  if (typeof value !== "number" || !Number.isSafeInteger(value)) throw malformed(`'${path}' must be an integer.`);
  return value;
}

/** For fields that take a string or an array, once the string has been handled. */
function stringOrArray(value: unknown, path: string): unknown[] {
  if (!Array.isArray(value)) throw malformed(`'${path}' must be a string or an array.`);
  return value;
}

/** Sub-fields outside `known` are refused when set: nothing the caller sent is dropped unseen. */
function refuseUnknownKeys(value: Json, known: ReadonlySet<string>, path: string): void {
  for (const key of Object.keys(value)) {
    if (!known.has(key) && present(value[key])) throw refusedField(`${path}.${key}`);
  }
}

/** Top-level fields read into canonical form. */
const translated: ReadonlySet<string> = new Set([
  "model",
  "instructions",
  "input",
  "tools",
  "tool_choice",
  "max_output_tokens",
  "temperature",
  "top_p",
  "parallel_tool_calls",
  "stream",
  "stream_options",
  "text",
  "reasoning",
  "user",
  "safety_identifier",
]);

/** Top-level fields that change nothing in the answer: left out of the translated request. */
const leftOut: ReadonlySet<string> = new Set(["store", "metadata", "service_tier", "prompt_cache_key"]);

/** Refused unless absent, null or their harmless value. */
const harmless: ReadonlyMap<string, (value: unknown) => boolean> = new Map([
  ["background", (value: unknown) => value === false],
  ["include", (value: unknown) => Array.isArray(value) && value.length === 0],
  ["truncation", (value: unknown) => value === "disabled"],
]);

function checkTopLevelFields(body: Json): void {
  for (const key of Object.keys(body)) {
    if (translated.has(key) || leftOut.has(key)) continue;
    const value = body[key];
    if (!present(value)) continue;
    const isHarmless = harmless.get(key);
    if (isHarmless === undefined || !isHarmless(value)) throw refusedField(key);
  }
}

// Reading: images and content parts

function readImage(part: Json, path: string): Extract<Part, { type: "image" }> {
  if (present(part.file_id)) throw untranslatable(`an 'input_image' part refers to an uploaded file by 'file_id', which only OpenAI can resolve.`);
  // `detail` is left out: the other formats have no such setting (docs/gateway.md).
  return { type: "image", source: imageSourceFromUrl(requiredString(part.image_url, `${path}.image_url`)) };
}

const refusedPart = (type: string) => untranslatable(`the content part type '${type}' of ${API} has no equivalent.`);

/** One part of a message's content. */
function readContentPart(value: unknown, path: string): Extract<Part, { type: "text" | "image" }> {
  const part = requiredObject(value, path);
  const type = requiredString(part.type, `${path}.type`);
  switch (type) {
    case "input_text":
    case "output_text":
      return { type: "text", text: requiredString(part.text, `${path}.text`) };
    case "refusal":
      return { type: "text", text: requiredString(part.refusal, `${path}.refusal`) };
    case "input_image":
      return readImage(part, path);
    default:
      throw refusedPart(type);
  }
}

function readContent(value: unknown, path: string): Array<Extract<Part, { type: "text" | "image" }>> {
  if (typeof value === "string") return [{ type: "text", text: value }];
  const parts = stringOrArray(value, path);
  const out: Array<Extract<Part, { type: "text" | "image" }>> = [];
  for (let i = 0; i < parts.length; i++) out.push(readContentPart(parts[i], `${path}[${i}]`));
  return out;
}

/** A function_call_output's output: a string, or input_text and input_image parts. */
function readToolOutput(value: unknown, path: string): ToolResultContent {
  if (typeof value === "string") return value;
  const parts = stringOrArray(value, path);
  const out: Array<Extract<Part, { type: "text" | "image" }>> = [];
  for (let i = 0; i < parts.length; i++) {
    const part = requiredObject(parts[i], `${path}[${i}]`);
    const type = requiredString(part.type, `${path}[${i}].type`);
    if (type !== "input_text" && type !== "input_image") throw refusedPart(type);
    out.push(readContentPart(part, `${path}[${i}]`));
  }
  return out;
}

// Reading: input items

/** Canonical messages as they are read: consecutive messages of one role become one. */
class Conversation {
  readonly system: string[] = [];
  readonly messages: Message[] = [];

  add(role: Message["role"], parts: Part[]): void {
    const last = this.messages.at(-1);
    if (last?.role !== role) {
      this.messages.push({ role, content: parts });
      return;
    }
    // A loop, not push(...parts): a spread of a very long array overflows the stack.
    for (const part of parts) last.content.push(part);
  }
}

const ROLES: ReadonlySet<string> = new Set(["user", "assistant", "system", "developer"]);

function readMessageItem(item: Json, path: string, conversation: Conversation): void {
  const role = item.role;
  if (typeof role !== "string" || !ROLES.has(role)) throw malformed(`'${path}.role' must be 'user', 'assistant', 'system' or 'developer'.`);
  const parts = readContent(item.content, `${path}.content`);
  if (role === "user" || role === "assistant") {
    conversation.add(role, parts);
    return;
  }
  const texts: string[] = [];
  for (const part of parts) {
    if (part.type !== "text") throw untranslatable(`a ${role} message holds an image, and system prompts carry text only.`);
    texts.push(part.text);
  }
  conversation.system.push(texts.join("\n"));
}

function readItem(value: unknown, path: string, conversation: Conversation): void {
  const item = requiredObject(value, path);
  const type = present(item.type) ? requiredString(item.type, `${path}.type`) : "message";
  switch (type) {
    case "message":
      return readMessageItem(item, path, conversation);
    case "function_call":
      return conversation.add("assistant", [
        {
          type: "tool_call",
          id: requiredString(item.call_id, `${path}.call_id`),
          name: requiredString(item.name, `${path}.name`),
          arguments: requiredString(item.arguments, `${path}.arguments`),
        },
      ]);
    case "function_call_output":
      return conversation.add("user", [
        { type: "tool_result", callId: requiredString(item.call_id, `${path}.call_id`), content: readToolOutput(item.output, `${path}.output`), isError: false },
      ]);
    default:
      throw untranslatable(`the input item type '${type}' of ${API} has no equivalent.`);
  }
}

function readInput(body: Json): Conversation {
  const conversation = new Conversation();
  if (present(body.instructions)) conversation.system.push(requiredString(body.instructions, "instructions"));
  const input = body.input;
  if (!present(input)) return conversation;
  if (typeof input === "string") {
    conversation.add("user", [{ type: "text", text: input }]);
    return conversation;
  }
  const items = stringOrArray(input, "input");
  for (let i = 0; i < items.length; i++) readItem(items[i], `input[${i}]`, conversation);
  return conversation;
}

// Reading: tools and options

const FUNCTION_TOOL_KEYS: ReadonlySet<string> = new Set(["type", "name", "description", "parameters", "strict"]);

function readTool(value: unknown, path: string): FunctionTool {
  const tool = requiredObject(value, path);
  const type = requiredString(tool.type, `${path}.type`);
  if (type !== "function") throw untranslatable(`the tool type '${type}' is a built-in tool of ${API}.`);
  for (const key of Object.keys(tool)) {
    if (!FUNCTION_TOOL_KEYS.has(key) && present(tool[key])) throw untranslatable(`the function tool field '${key}' of ${API} has no equivalent.`);
  }
  // A function without parameters takes none: the schema of an empty object says so everywhere.
  const parameters = optionalObject(tool.parameters, `${path}.parameters`) ?? { type: "object", properties: {} };
  return {
    name: requiredString(tool.name, `${path}.name`),
    description: optionalString(tool.description, `${path}.description`),
    parameters,
    strict: optionalBoolean(tool.strict, `${path}.strict`),
  };
}

function readTools(value: unknown): FunctionTool[] {
  const tools = optionalArray(value, "tools") ?? [];
  const out: FunctionTool[] = [];
  for (let i = 0; i < tools.length; i++) out.push(readTool(tools[i], `tools[${i}]`));
  return out;
}

function readToolChoice(value: unknown): ToolChoice | null {
  if (!present(value)) return null;
  if (value === "auto" || value === "none" || value === "required") return { type: value };
  if (typeof value === "string") throw malformed("'tool_choice' must be 'auto', 'none', 'required' or an object.");
  const choice = requiredObject(value, "tool_choice");
  const type = requiredString(choice.type, "tool_choice.type");
  if (type !== "function") throw untranslatable(`the tool_choice type '${type}' of ${API} has no equivalent.`);
  return { type: "tool", name: requiredString(choice.name, "tool_choice.name") };
}

function readFormat(value: unknown): ResponseFormat | null {
  if (!present(value)) return null;
  const format = requiredObject(value, "text.format");
  switch (format.type) {
    case "text":
      return null;
    case "json_object":
      return { type: "json_object" };
    case "json_schema":
      return {
        type: "json_schema",
        name: requiredString(format.name, "text.format.name"),
        schema: requiredObject(format.schema, "text.format.schema"),
        strict: optionalBoolean(format.strict, "text.format.strict"),
        description: optionalString(format.description, "text.format.description"),
      };
    default:
      throw malformed("'text.format.type' must be 'text', 'json_object' or 'json_schema'.");
  }
}

function readText(value: unknown): ResponseFormat | null {
  if (!present(value)) return null;
  const text = requiredObject(value, "text");
  // verbosity is refused by refuseUnknownKeys when set: no other format has it.
  refuseUnknownKeys(text, new Set(["format"]), "text");
  return readFormat(text.format);
}

const EFFORTS: ReadonlySet<string> = new Set(["minimal", "low", "medium", "high"]);

function readReasoning(value: unknown): ReasoningEffort | null {
  if (!present(value)) return null;
  const reasoning = requiredObject(value, "reasoning");
  // summary and generate_summary ask for reasoning summaries, which canonical answers do not carry.
  refuseUnknownKeys(reasoning, new Set(["effort"]), "reasoning");
  const effort = optionalString(reasoning.effort, "reasoning.effort");
  if (effort === null) return null;
  if (!EFFORTS.has(effort)) throw untranslatable(`the reasoning effort '${effort}' of ${API} has no equivalent.`);
  return effort as ReasoningEffort;
}

function readStreamOptions(value: unknown): void {
  if (!present(value)) return;
  // include_obfuscation pads the caller's own stream events: nothing to translate.
  refuseUnknownKeys(requiredObject(value, "stream_options"), new Set(["include_obfuscation"]), "stream_options");
}

function readRequest(body: Json): CanonicalRequest {
  checkTopLevelFields(body);
  const conversation = readInput(body);
  readStreamOptions(body.stream_options);
  return {
    model: requiredString(body.model, "model"),
    system: conversation.system,
    messages: conversation.messages,
    tools: readTools(body.tools),
    toolChoice: readToolChoice(body.tool_choice),
    maxOutputTokens: optionalInteger(body.max_output_tokens, "max_output_tokens"),
    temperature: optionalNumber(body.temperature, "temperature"),
    topP: optionalNumber(body.top_p, "top_p"),
    topK: null,
    stopSequences: [],
    stream: optionalBoolean(body.stream, "stream") ?? false,
    streamUsage: true,
    parallelToolCalls: optionalBoolean(body.parallel_tool_calls, "parallel_tool_calls"),
    responseFormat: readText(body.text),
    reasoningEffort: readReasoning(body.reasoning),
    user: optionalString(body.user, "user") ?? optionalString(body.safety_identifier, "safety_identifier"),
  };
}

// Writing requests

const inputImage = (source: ImageSource): Json => ({ type: "input_image", image_url: imageUrl(source), detail: "auto" });

function writeMessagePart(role: Message["role"], part: Extract<Part, { type: "text" | "image" }>): Json {
  if (part.type === "text") return { type: role === "user" ? "input_text" : "output_text", text: part.text };
  // Responses takes only output_text and refusal parts in assistant messages.
  if (role === "assistant") throw untranslatable(`an assistant message holds an image, which ${API} does not take.`);
  return inputImage(part.source);
}

/** Text-only results are a string (what every deployment takes); with images, input parts. */
function writeToolOutput(content: ToolResultContent): string | Json[] {
  if (typeof content === "string") return content;
  if (content.every((part) => part.type === "text")) return content.map((part) => part.text).join("\n");
  return content.map((part) => (part.type === "text" ? { type: "input_text", text: part.text } : inputImage(part.source)));
}

/**
 * A canonical message as input items, in its parts' order: each run of text and images is one
 * message item, each tool call a function_call item, each tool result a function_call_output.
 */
function writeMessage(message: Message, items: Json[]): void {
  let run: Json[] | null = null;
  for (const part of message.content) {
    if (part.type === "text" || part.type === "image") {
      if (run === null) {
        run = [];
        items.push({ role: message.role, content: run });
      }
      run.push(writeMessagePart(message.role, part));
      continue;
    }
    run = null;
    if (part.type === "tool_call") items.push({ type: "function_call", call_id: part.id, name: part.name, arguments: part.arguments });
    // isError has no place in the responses format: the result's content says what happened.
    else items.push({ type: "function_call_output", call_id: part.callId, output: writeToolOutput(part.content) });
  }
}

function writeTool(tool: FunctionTool): Json {
  const out: Json = { type: "function", name: tool.name };
  if (tool.description !== null) out.description = tool.description;
  out.parameters = tool.parameters;
  // Responses makes an unsaid strict true; the caller's format did not ask for strict mode.
  out.strict = tool.strict ?? false;
  return out;
}

function writeToolChoice(choice: ToolChoice): string | Json {
  return choice.type === "tool" ? { type: "function", name: choice.name } : choice.type;
}

function writeFormat(format: ResponseFormat): Json {
  if (format.type === "json_object") return { type: "json_object" };
  const out: Json = { type: "json_schema", name: format.name };
  if (format.description !== null) out.description = format.description;
  out.schema = format.schema;
  if (format.strict !== null) out.strict = format.strict;
  return out;
}

function writeRequest(request: CanonicalRequest): Json {
  if (request.stopSequences.length > 0) throw untranslatable(`${API} has no stop sequences.`);
  if (request.topK !== null) throw untranslatable(`${API} has no top_k.`);
  const body: Json = { model: request.model };
  if (request.system.length > 0) body.instructions = request.system.join("\n\n");
  const input: Json[] = [];
  for (const message of request.messages) writeMessage(message, input);
  body.input = input;
  if (request.tools.length > 0) body.tools = request.tools.map(writeTool);
  if (request.toolChoice !== null) body.tool_choice = writeToolChoice(request.toolChoice);
  if (request.maxOutputTokens !== null) body.max_output_tokens = request.maxOutputTokens;
  if (request.temperature !== null) body.temperature = request.temperature;
  if (request.topP !== null) body.top_p = request.topP;
  if (request.parallelToolCalls !== null) body.parallel_tool_calls = request.parallelToolCalls;
  if (request.responseFormat !== null) body.text = { format: writeFormat(request.responseFormat) };
  if (request.reasoningEffort !== null) body.reasoning = { effort: request.reasoningEffort };
  if (request.stream) body.stream = true;
  if (request.user !== null) body.user = request.user;
  return body;
}

// Answers

function readOutputMessage(item: Json, content: AnswerPart[]): void {
  if (!Array.isArray(item.content)) throw unreadableAnswer("a message item has no content array.");
  for (const part of item.content) {
    if (isObject(part) && part.type === "output_text" && typeof part.text === "string") content.push({ type: "text", text: part.text });
    else if (isObject(part) && part.type === "refusal" && typeof part.refusal === "string") content.push({ type: "text", text: part.refusal });
    else throw unreadableAnswer("a message item holds a part that is neither output_text nor refusal.");
  }
}

/** The output items as answer parts; reasoning items are skipped (their tokens are in usage). */
function readOutput(output: unknown): AnswerPart[] {
  if (!Array.isArray(output)) throw unreadableAnswer("the response has no output array.");
  const content: AnswerPart[] = [];
  for (const item of output) {
    if (!isObject(item)) throw unreadableAnswer("an output item is not an object.");
    if (item.type === "message") readOutputMessage(item, content);
    else if (item.type === "function_call") {
      if (typeof item.call_id !== "string" || typeof item.name !== "string" || typeof item.arguments !== "string") {
        throw unreadableAnswer("a function_call item lacks its call_id, name or arguments.");
      }
      content.push({ type: "tool_call", id: item.call_id, name: item.name, arguments: item.arguments });
    } else if (item.type !== "reasoning") {
      throw unreadableAnswer(`the output item type ${JSON.stringify(item.type ?? null)} is not one the gateway translates.`);
    }
  }
  return content;
}

function readAnswer(body: unknown, now: number): CanonicalAnswer {
  if (!isObject(body)) throw unreadableAnswer("the answer is not a JSON object.");
  // A failed response has no usable output: its error is what the caller must see.
  if (body.status === "failed") readStopReason(body, false);
  if (typeof body.id !== "string" || typeof body.model !== "string") throw unreadableAnswer("the response has no id or model.");
  const content = readOutput(body.output);
  return {
    id: body.id,
    model: body.model,
    created: typeof body.created_at === "number" ? body.created_at : now,
    content,
    stopReason: readStopReason(body, content.some((part) => part.type === "tool_call")),
    stopSequence: null,
    usage: readUsage(body.usage) ?? noUsage(),
  };
}

/** Each run of consecutive text parts is one message item; each tool call a function_call item. */
function writeAnswer(answer: CanonicalAnswer): Json {
  const output: Json[] = [];
  let run: Json[] | null = null;
  for (const part of answer.content) {
    if (part.type === "text") {
      if (run === null) {
        run = [];
        output.push(messageItem(`msg_${output.length}_${answer.id}`, "completed", run));
      }
      run.push(outputText(part.text));
    } else {
      run = null;
      output.push(functionCallItem(part.id, part.name, part.arguments, "completed"));
    }
  }
  return finishedResponse({ id: answer.id, model: answer.model, created: answer.created, output, usage: answer.usage }, answer.stopReason);
}

export const responsesFormat: WireFormat = {
  name: "responses",
  readRequest,
  // Responses needs no maximum: defaultMaxTokens is not used.
  writeRequest,
  readAnswer,
  writeAnswer,
  streamReader: (now) => new ResponsesStreamReader(now),
  streamWriter: () => new ResponsesStreamWriter(),
};
