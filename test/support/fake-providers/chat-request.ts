/**
 * Reads a POST /v1/chat/completions request as the OpenAI API validates it, for the fields the fake
 * reads: messages (roles, content parts, image URLs, tool_calls / tool message pairing), tools,
 * tool_choice and stream_options. The compatible kind (vLLM-like) reads it the same way.
 */
import { isRecord, jsonTypeName } from "./common.ts";
import { imageUrlProblem } from "./images.ts";
import { readWith, refuse, type ReadResult, type RequestReading, type ToolChoice, type ToolResultSeen } from "./tools.ts";

const ROLES = ["system", "assistant", "user", "function", "tool", "developer"];
const USER_PARTS = ["text", "image_url", "input_audio", "file"];
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

export function readChatRequest(body: Record<string, unknown>): ReadResult {
  return readWith(() => read(body));
}

function read(body: Record<string, unknown>): RequestReading {
  if (body.stream_options !== undefined && body.stream_options !== null && body.stream !== true) {
    refuse("The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options", "invalid_value");
  }
  const tools = readTools(body.tools);
  const choice = readToolChoice(body.tool_choice, tools);
  const messages = body.messages;
  if (messages === undefined) refuse("Missing required parameter: 'messages'.", "messages", "missing_required_parameter");
  if (!Array.isArray(messages)) refuse(`Invalid type for 'messages': expected an array of objects, but got ${jsonTypeName(messages)} instead.`, "messages", "invalid_type");
  if (messages.length === 0) {
    refuse("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", "messages", "empty_array");
  }

  const names = new Map<string, string>();
  let images = 0;
  /** The tool_calls of the assistant message the current run of tool messages answers, and which are still unanswered. */
  let open: { index: number; ids: string[]; unanswered: Set<string> } | null = null;
  let results: ToolResultSeen[] = [];
  for (const [i, message] of (messages as unknown[]).entries()) {
    const at = `messages[${i}]`;
    if (!isRecord(message)) refuse(`Invalid type for '${at}': expected an object, but got ${jsonTypeName(message)} instead.`, at, "invalid_type");
    const role = message.role;
    if (role === undefined) refuse(`Missing required parameter: '${at}.role'.`, `${at}.role`, "missing_required_parameter");
    if (typeof role !== "string" || !ROLES.includes(role)) {
      refuse(`Invalid value: '${String(role)}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`, `${at}.role`, "invalid_value");
    }
    if (role === "tool") {
      if (open === null) refuse("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", `messages.[${i}].role`);
      const id = requiredString(message.tool_call_id, `${at}.tool_call_id`);
      if (!open.ids.includes(id)) refuse(`Invalid parameter: 'tool_call_id' of '${id}' not found in 'tool_calls' of previous message.`, `messages.[${i}].tool_call_id`);
      open.unanswered.delete(id);
      results.push({ name: names.get(id) ?? "", text: readText(message.content, `${at}.content`) });
      continue;
    }
    if (open !== null) unansweredCalls(open.index, open.unanswered);
    open = null;
    results = [];
    if (role === "assistant") {
      const ids = readAssistant(message, at, names);
      if (ids.length > 0) open = { index: i, ids, unanswered: new Set(ids) };
    } else if (role === "user") {
      images += readUserContent(message.content, `${at}.content`);
    } else if (role === "system" || role === "developer") {
      readText(message.content, `${at}.content`);
    }
  }
  if (open !== null) unansweredCalls(open.index, open.unanswered);
  const lastRole = (messages.at(-1) as { role: string }).role;
  return { tools, choice, last: lastRole === "tool" ? "tool_results" : lastRole === "user" ? "user" : "other", results, images };
}

function unansweredCalls(index: number, unanswered: Set<string>): void {
  if (unanswered.size === 0) return;
  refuse(
    `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...unanswered].join(", ")}`,
    `messages.[${index}].role`,
  );
}

function requiredString(value: unknown, at: string): string {
  if (value === undefined) refuse(`Missing required parameter: '${at}'.`, at, "missing_required_parameter");
  if (typeof value !== "string") refuse(`Invalid type for '${at}': expected a string, but got ${jsonTypeName(value)} instead.`, at, "invalid_type");
  return value;
}

/** System, developer and tool content: a string, or text parts; answers the text. */
function readText(content: unknown, at: string): string {
  if (content === undefined) refuse(`Missing required parameter: '${at}'.`, at, "missing_required_parameter");
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) refuse(`Invalid type for '${at}': expected one of a string or array of objects, but got ${jsonTypeName(content)} instead.`, at, "invalid_type");
  return content
    .map((part: unknown, j) => {
      const where = `${at}[${j}]`;
      if (!isRecord(part)) refuse(`Invalid type for '${where}': expected an object, but got ${jsonTypeName(part)} instead.`, where, "invalid_type");
      if (part.type !== "text") refuse(`Invalid value: '${String(part.type)}'. Supported values are: 'text'.`, `${where}.type`, "invalid_value");
      return requiredString(part.text, `${where}.text`);
    })
    .join("\n");
}

/** A user message's content; answers how many images it holds. */
function readUserContent(content: unknown, at: string): number {
  if (content === undefined) refuse(`Missing required parameter: '${at}'.`, at, "missing_required_parameter");
  if (typeof content === "string") return 0;
  if (!Array.isArray(content)) refuse(`Invalid type for '${at}': expected one of a string or array of objects, but got ${jsonTypeName(content)} instead.`, at, "invalid_type");
  let images = 0;
  content.forEach((part: unknown, j) => {
    const where = `${at}[${j}]`;
    if (!isRecord(part)) refuse(`Invalid type for '${where}': expected an object, but got ${jsonTypeName(part)} instead.`, where, "invalid_type");
    if (typeof part.type !== "string" || !USER_PARTS.includes(part.type)) {
      refuse(`Invalid value: '${String(part.type)}'. Supported values are: 'text', 'image_url', 'input_audio', and 'file'.`, `${where}.type`, "invalid_value");
    }
    if (part.type === "text") requiredString(part.text, `${where}.text`);
    if (part.type === "image_url") {
      images += 1;
      if (!isRecord(part.image_url)) refuse(`Missing required parameter: '${where}.image_url'.`, `${where}.image_url`, "missing_required_parameter");
      const problem = imageUrlProblem(part.image_url.url);
      if (problem !== null) refuse(`Invalid '${where}.image_url.url': ${problem}.`, `${where}.image_url.url`, "invalid_image_url");
    }
  });
  return images;
}

/** An assistant message: content or tool_calls; answers the ids of its tool calls, noting their names. */
function readAssistant(message: Record<string, unknown>, at: string, names: Map<string, string>): string[] {
  const calls = message.tool_calls;
  const hasCalls = Array.isArray(calls) && calls.length > 0;
  const content = message.content;
  if ((content === undefined || content === null) && !hasCalls) {
    refuse(`Invalid value for 'content': expected a string, got null.`, `${at}.content`, "invalid_value");
  }
  if (calls === undefined || calls === null) return [];
  if (!Array.isArray(calls)) refuse(`Invalid type for '${at}.tool_calls': expected an array of objects, but got ${jsonTypeName(calls)} instead.`, `${at}.tool_calls`, "invalid_type");
  return calls.map((call: unknown, k) => {
    const where = `${at}.tool_calls[${k}]`;
    if (!isRecord(call)) refuse(`Invalid type for '${where}': expected an object, but got ${jsonTypeName(call)} instead.`, where, "invalid_type");
    const id = requiredString(call.id, `${where}.id`);
    if (call.type !== "function") refuse(`Invalid value: '${String(call.type)}'. Supported values are: 'function'.`, `${where}.type`, "invalid_value");
    if (!isRecord(call.function)) refuse(`Missing required parameter: '${where}.function'.`, `${where}.function`, "missing_required_parameter");
    names.set(id, requiredString(call.function.name, `${where}.function.name`));
    requiredString(call.function.arguments, `${where}.function.arguments`);
    return id;
  });
}

/** tools: type "function" with function.name (the fake does not serve "custom" tools); names unique. */
function readTools(tools: unknown): string[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) refuse(`Invalid type for 'tools': expected an array of objects, but got ${jsonTypeName(tools)} instead.`, "tools", "invalid_type");
  const names = tools.map((tool: unknown, i) => {
    const at = `tools[${i}]`;
    if (!isRecord(tool)) refuse(`Invalid type for '${at}': expected an object, but got ${jsonTypeName(tool)} instead.`, at, "invalid_type");
    if (tool.type === undefined) refuse(`Missing required parameter: '${at}.type'.`, `${at}.type`, "missing_required_parameter");
    if (tool.type === "custom") refuse("The fake provider serves only function tools, not 'custom'.", `${at}.type`, "invalid_value");
    if (tool.type !== "function") refuse(`Invalid value: '${String(tool.type)}'. Supported values are: 'function' and 'custom'.`, `${at}.type`, "invalid_value");
    if (!isRecord(tool.function)) refuse(`Missing required parameter: '${at}.function'.`, `${at}.function`, "missing_required_parameter");
    const name = requiredString(tool.function.name, `${at}.function.name`);
    if (!TOOL_NAME.test(name)) {
      refuse(`Invalid '${at}.function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.`, `${at}.function.name`, "invalid_value");
    }
    return name;
  });
  if (new Set(names).size !== names.length) refuse("Duplicate tool names are not allowed.", "tools", "invalid_value");
  return names;
}

function readToolChoice(choice: unknown, tools: string[]): ToolChoice {
  if (choice === undefined || choice === null) return { type: "auto" };
  if (tools.length === 0) refuse("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", "tool_choice");
  if (choice === "auto") return { type: "auto" };
  if (choice === "none") return { type: "none" };
  if (choice === "required") return { type: "required" };
  if (typeof choice === "string") refuse(`Invalid value: '${choice}'. Supported values are: 'none', 'auto', and 'required'.`, "tool_choice", "invalid_value");
  if (!isRecord(choice) || choice.type !== "function" || !isRecord(choice.function)) {
    refuse("The fake provider takes tool_choice 'none', 'auto', 'required' or {type: 'function', function: {name}}.", "tool_choice", "invalid_value");
  }
  const name = requiredString(choice.function.name, "tool_choice.function.name");
  if (!tools.includes(name)) refuse(`Invalid value for 'tool_choice': function '${name}' is not among the declared tools.`, "tool_choice.function.name", "invalid_value");
  return { type: "named", name };
}
